"""The kata in two languages (issue #21): every message has its Korean entry, English stays the default.

The catalogues' completeness needs Babel (the extraction: ``pip install -e
".[notebook,dev]"``, as CI installs); without it those checks say so and skip.
The rest runs on the standard library alone, as the kata does.
"""

import gettext
import subprocess
import sys

# Imported before the inner pytest runs, and kept (see test_known_wrong.py).
import hypothesis
import matplotlib.pyplot
import numpy
import PIL.Image
import pytest
import torch
import torchvision.transforms

from kata import i18n
from kata.i18n import _, catalogue_files, language, say, translate_stub
from kata.i18n.particles import PAIR
from kata.project import locate

ROOT = locate().root
pytest_plugins = ["pytester"]
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, PIL.Image, torch, torchvision.transforms)


@pytest.fixture
def lang_env(monkeypatch):
    """A clean slate: no language chosen, none in the environment, no copy's choice."""
    for name in ("KATA_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.setenv(name, "")       # recorded, so each comes back as it was
        monkeypatch.delenv(name)
    monkeypatch.setattr(i18n, "_chosen", None)
    monkeypatch.setattr(i18n, "_project_root", lambda: None)
    i18n.reread_copy_choice()
    yield monkeypatch
    i18n.reread_copy_choice()


@pytest.mark.parametrize("domain", list(catalogue_files()))
def test_every_message_has_a_current_korean_entry(domain):
    catalogues = pytest.importorskip("kata.i18n.catalogues", reason="Babel is not installed: pip install -e '.[dev]'")
    found = catalogues.problems(domain)
    assert not found, (f"{len(found)} problem(s) in the {domain!r} catalogue; run "
                       f"`python -m kata.i18n.catalogues update "
                       f"{domain}`, translate, then `... compile {domain}`:\n  " + "\n  ".join(found[:40]))


def test_each_exercise_has_a_catalogue_of_its_own_and_no_catalogue_is_left_over():
    from kata import curriculum

    every = catalogue_files()
    assert [d for d in every if i18n.exercise_of_catalogue(d)] == [f"exercise-{n}" for n in curriculum.names()], (
        "each exercise's Korean is its own catalogue, exercise-NAME, found by its name in kata/curriculum.toml")
    assert every["exercise-devices"] == ["kata/curriculum.toml", "exercises/devices.py", "records/devices.py",
                                         "tests/test_devices.py"]
    catalogues = pytest.importorskip("kata.i18n.catalogues", reason="Babel is not installed: pip install -e '.[dev]'")
    found = catalogues.strays()
    assert not found, "catalogue files of no domain (the kata reads every compiled one):\n  " + "\n  ".join(found)


def _written_out(node) -> str | None:
    """The words of a message written as a plain or f-string (or a sum of them), not through _() or say()."""
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp):
        return _written_out(node.left) or _written_out(node.right)
    return None


def test_every_message_a_check_shows_goes_through_the_catalogues():
    """An assert's message or a pytest.fail/skip text written out in English would reach a Korean learner
    as it is: each must be `say(...)`, `_(...)` or a constant marked `N_` and translated where shown."""
    import ast
    import re

    found = []
    for path in sorted([*(ROOT / "tests").glob("test_*.py"), *(ROOT / "kata" / "checks").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            message = None
            if isinstance(node, ast.Assert) and node.msg is not None:
                message = _written_out(node.msg)
            elif isinstance(node, ast.Call) and node.args and getattr(node.func, "attr", getattr(
                    node.func, "id", None)) in ("fail", "skip", "xfail", "fail_if"):
                message = _written_out(node.args[0])
            if message and len(re.findall(r"[A-Za-z]{3,}", message)) >= 3:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {message[:70]!r}")
    assert not found, ("these messages are written out in English, not through the catalogues (say(...), "
                       "_(...)):\n  " + "\n  ".join(found))


def test_english_is_the_default(lang_env):
    assert language() == "en"
    assert isinstance(i18n.translation("en"), gettext.NullTranslations)
    lang_env.setenv("LANG", "C.UTF-8")
    assert language() == "en"


@pytest.mark.parametrize(("env", "expected"), [
    ({"KATA_LANG": "ko"}, "ko"),
    ({"LANG": "ko_KR.UTF-8"}, "ko"),
    ({"LC_ALL": "ko_KR.UTF-8", "LANG": "en_US.UTF-8"}, "ko"),
    ({"KATA_LANG": "en", "LANG": "ko_KR.UTF-8"}, "en"),
    ({"LANG": "en_GB.UTF-8"}, "en"),
    ({"KATA_LANG": "fr"}, "en"),
])
def test_the_language_comes_from_kata_lang_then_the_locale(lang_env, env, expected):
    for name, value in env.items():
        lang_env.setenv(name, value)
    assert language() == expected, f"with {env} the kata should speak {expected}"


def test_the_copys_choice_comes_before_the_locale(lang_env, tmp_path):
    (tmp_path / i18n.LANG_FILE).write_text("ko\n")
    lang_env.setattr(i18n, "_project_root", lambda: tmp_path)
    lang_env.setenv("LANG", "en_US.UTF-8")
    assert language() == "ko"
    lang_env.setenv("KATA_LANG", "en")
    assert language() == "en"


def test_set_language_reaches_the_processes_it_starts(lang_env):
    i18n.set_language("ko")
    assert language() == "ko"
    out = subprocess.run([sys.executable, "-c", "from kata.i18n import language; print(language())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "ko"
    with pytest.raises(ValueError, match="unknown language"):
        i18n.set_language("fr")


def test_a_message_without_an_entry_is_its_english(lang_env):
    lang_env.setenv("KATA_LANG", "ko")
    text = "a sentence no catalogue holds {n}"
    assert _(text) == text
    assert say(text, n=3) == "a sentence no catalogue holds 3"


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "exercises").glob("*.py")))
def test_a_stub_goes_to_korean_and_back_unchanged(name):
    from kata.pristine import stub_source

    english = stub_source(name)
    korean = translate_stub(english, "ko")
    assert translate_stub(korean, "en") == english, f"exercises/{name}.py: Korean and back is not the English stub"
    compile(korean, f"{name}.py (ko)", "exec")
    if i18n._entries("ko"):
        assert korean != english, f"exercises/{name}.py has no Korean text"


# --- a learner's run in Korean: no English sentence of the kata's own -----------------------------

def english_sentences() -> dict[str, str]:
    """The kata's own English, as a run could print it: from each message id, each stretch between
    placeholders of at least four words, mapped to its message id. A stretch that the Korean entry
    keeps as it stands (code, a command line, PyTorch's own error text) is not English prose."""
    import re

    found = {}
    for domain in catalogue_files():
        catalogue = gettext.translation(domain, i18n.LOCALE_DIR, languages=["ko"], fallback=True)
        for msgid, msgstr in getattr(catalogue, "_catalog", {}).items():
            if not isinstance(msgid, str) or not msgid:
                continue
            for line in msgid.splitlines():
                for stretch in re.split(r"\{[^{}]*\}|`[^`]*`|\"[^\"]*\"|'[^' ]*'", line):
                    stretch = stretch.strip(" :;,.()-")
                    if len(re.findall(r"[A-Za-z]{2,}", stretch)) >= 4 and stretch not in msgstr:
                        found.setdefault(stretch, msgid)
    return found


def english_in(text: str) -> list[str]:
    sentences = english_sentences()
    return sorted({f"{s!r} (from {sentences[s].splitlines()[0][:60]!r})" for s in sentences if s in text})


@pytest.fixture
def korean(monkeypatch):
    monkeypatch.setenv("KATA_LANG", "ko")
    monkeypatch.setattr(i18n, "_chosen", None)
    return monkeypatch


def korean_run(pytester, target, *args) -> str:
    result = pytester.runpytest_inprocess("--target", str(target), *args, "-p", "no:cacheprovider")
    return result.stdout.str() + result.stderr.str()


def test_a_korean_run_on_the_stubs_speaks_korean(korean, pytester, tmp_path):
    from kata.pristine import write_stubs

    stubs = tmp_path / "exercises"
    assert not write_stubs(stubs)
    text = korean_run(pytester, stubs, *map(str, sorted((ROOT / "tests").glob("test_*.py"))), "-m", "not slow")
    assert "연습 문제" in text or "검사" in text, f"the run on the stubs printed no Korean:\n{text[-3000:]}"
    leaked = english_in(text)
    assert not leaked, "a Korean run on the stubs printed the kata's English:\n  " + "\n  ".join(leaked[:30])
    pairs = [line.strip() for line in text.splitlines() if PAIR.search(line)]
    assert not pairs, "a Korean run on the stubs printed particle pairs (kata.i18n.particles):\n  " + "\n  ".join(pairs)


def test_a_korean_run_on_the_seeds_bug_explains_it_in_korean(korean, pytester, tmp_path):
    import tomllib

    from kata.checks.mutants import write_mutant

    mutants = tomllib.loads((ROOT / "tests" / "selftest" / "known_wrong.toml").read_text())["mutant"]
    seed = next(m for m in mutants if m["mistake"].startswith("the seed's bug") and "accelerator" in m["mistake"])
    folder = write_mutant(tmp_path / "seed", seed["exercise"], *[(e["old"], e["new"]) for e in seed["edit"]])
    text = korean_run(pytester, folder, str(ROOT / "tests" / f"test_{seed['exercise']}.py"),
                      "-k", " or ".join(seed["checks"]))
    assert "텐서" in text and "호스트" in text, f"the seed's bug was not explained in Korean:\n{text[-3000:]}"
    leaked = english_in(text)
    assert not leaked, "a Korean run on the seed's bug printed the kata's English:\n  " + "\n  ".join(leaked[:30])
