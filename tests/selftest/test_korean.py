"""Korean that reads as written in Korean (issue #34): particles chosen after code, one term per concept.

- kata.i18n.particles chooses 이/가, 을/를, 은/는, 과/와 and (으)로 (and the copula's 이라, 이나,
  이었, 이며) from how a value's last character is read; :func:`kata.i18n.say` puts the particle
  that fits each value where a Korean entry wrote the conventional pair after a placeholder;
- no compiled Korean message leaves a pair where no placeholder comes right before it (there the
  translation chooses the particle itself), and no text shown as written (a stub's docstring, a hint)
  holds one;
- the glossary, kata/locale/ko/terms.toml, holds in every Korean text: the catalogues' translations,
  docs/ko/, README.ko.md and the Korean notebooks, which write no pair at all;
- a Korean run of every known-wrong implementation's checks prints no pair (slow: a run per mutant;
  the stubs' Korean run is test_i18n.py's).
"""

import gettext
import json
import re
import tomllib

# Imported before the inner pytest runs, and kept (see test_known_wrong.py).
import hypothesis
import matplotlib.pyplot
import numpy
import PIL.Image
import pytest
import torch
import torchvision.transforms
from hypothesis import given
from hypothesis import strategies as st

from kata import curriculum, i18n
from kata.i18n import catalogue_files
from kata.i18n.particles import CONSONANT, PAIR, PAIRS, RIEUL, VOWEL, choose, ending, fill, unresolved
from kata.project import locate

ROOT = locate().root
TERMS = ROOT / "kata" / "locale" / "ko" / "terms.toml"
pytest_plugins = ["pytester"]
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, PIL.Image, torch, torchvision.transforms)


# --- the chooser ---------------------------------------------------------------------------------------------

READ = [
    # Hangul: the final consonant
    ("모델", RIEUL), ("텐서", VOWEL), ("파일", RIEUL), ("검사", VOWEL), ("책", CONSONANT), ("학습 곡선", CONSONANT),
    ("에포크", VOWEL), ("'-o'(원 마커가 있는 실선)", CONSONANT),
    # digits as read: 영 일 이 삼 사 오 육 칠 팔 구; 10 십, 100 백
    ("0", CONSONANT), ("1", RIEUL), ("2", VOWEL), ("3", CONSONANT), ("4", VOWEL), ("5", VOWEL), ("6", CONSONANT),
    ("7", RIEUL), ("8", RIEUL), ("9", VOWEL), ("10", CONSONANT), ("0.5", VOWEL), ("lr=0.01", RIEUL),
    ("cuda:0", CONSONANT), ("torch.float32", VOWEL), ("torch.bfloat16", CONSONANT), ("[0.1, 0.2, 0.3]", CONSONANT),
    ("torch.Size([3, 64, 64])", VOWEL), ("exercises/devices.py.~1~", RIEUL), ("30%", VOWEL),
    # letters by their names: 엘 엠 엔 알, the others end in a vowel
    ("t", VOWEL), ("l", RIEUL), ("m", CONSONANT), ("n", CONSONANT), ("r", RIEUL), ("x", VOWEL),
    ("CPU", VOWEL), ("SGD", VOWEL), ("mps", VOWEL), ("png", VOWEL), ("str", RIEUL), ("URL", RIEUL), ("NaN", CONSONANT),
    # words as loanwords
    ("cpu", VOWEL), ("'cpu'", VOWEL), ("to_device", VOWEL), ("plt.show()", VOWEL), ("RuntimeError", VOWEL),
    ("'exp_avg'", VOWEL), ("exercises/plotting.py", VOWEL), ("loss_hist_valid", VOWEL), ("history", VOWEL),
    ("float", VOWEL), ("dict", VOWEL), ("tensor", VOWEL), ("`kata hint devices`", VOWEL), ("README", VOWEL),
    ("model", RIEUL), ("build_model()", RIEUL), ("tuple", RIEUL), ("SIGKILL", RIEUL), ("KATA_LANG", CONSONANT),
    ("Adam", CONSONANT), ("train", CONSONANT), ("json", CONSONANT), ("string", CONSONANT), ("step", CONSONANT),
    ("plot", CONSONANT), ("stack", CONSONANT), ("dtype", CONSONANT), ("Dropout", CONSONANT), ("matplotlib", CONSONANT),
    ("SMILING", CONSONANT), ("KATA_HOME", CONSONANT), ("Heavy_Makeup", CONSONANT), ("SIGTERM", CONSONANT),
    ("ReLU", VOWEL), ("MaxPool2d", VOWEL), ("CelebA", VOWEL), ("check", VOWEL),
    # nothing read
    ("", None), ("...", None), ("()", None),
]


@pytest.mark.parametrize(("text", "sound"), READ)
def test_a_value_ends_as_a_korean_reader_says_it(text, sound):
    assert ending(text) == sound, f"{text!r} ends in {ending(text)}, read aloud: {sound}"


@pytest.mark.parametrize(("pair", "text", "chosen"), [
    ("이(가)", "cpu", "가"), ("이(가)", "model", "이"), ("을(를)", "RuntimeError", "를"), ("을(를)", "Adam", "을"),
    ("은(는)", "loss_hist_valid", "는"), ("은(는)", "3", "은"), ("(으)로", "devices.py.~1~", "로"),
    ("(으)로", "cuda:0", "으로"), ("(으)로", "모델", "로"), ("(으)로", "한국어", "로"), ("과(와)", "0.5", "와"),
    ("와(과)", "step", "과"), ("(이)라", "devices", "라"), ("(이)라", "train", "이라"), ("(이)었", "3", "이었"),
    ("(이)었", "2", "였"), ("(이)나", "/tmp/x_1", "이나"), ("(이)며", "cpu", "며"), ("을(를)", "", "을(를)"),
])
def test_the_particle_fits_what_it_follows(pair, text, chosen):
    assert choose(pair, text) == chosen


def test_say_puts_the_particle_that_fits_each_value():
    template = "{a}을(를) `{b}`이(가) {c}()을(를) [{d}]은(는) {e!r}(으)로 {f:.1f}과(와) {g}(이)었는데, 이(가)"
    assert fill(template, a="exercises/devices.py", b="kata hint model", c="plt.show", d=0, e="cuda:0", f=0.5,
                g=3) == ("exercises/devices.py를 `kata hint model`이 plt.show()를 [0]은 'cuda:0'으로 0.5와 "
                         "3이었는데, 이(가)"), "a pair after literal text is the translation's to choose"
    assert fill("{x}{y}을(를)", x="a", y="") == "a을(를)", "nothing read: the pair stays"
    assert unresolved(template) == ["이(가)"]
    assert unresolved("{x}을(를) x을(를) {{y}}(으)로") == ["을(를)", "(으)로"], "an escaped brace is no placeholder"
    assert unresolved("not a {template") == [], "a text with no pair"
    assert unresolved("{a 을(를)") == ["을(를)"], "a text that is no template: every pair in it"


SYLLABLES = st.integers(0, 11171).map(lambda n: chr(0xAC00 + n))


@given(st.text(max_size=5), SYLLABLES)
def test_a_hangul_syllable_ends_in_its_final_consonant(before, last):
    final = (ord(last) - 0xAC00) % 28
    assert ending(before + last) == (VOWEL if final == 0 else RIEUL if final == 8 else CONSONANT)


@given(st.integers(-10**12, 10**12))
def test_a_number_ends_as_its_last_digit_is_read(n):
    assert ending(str(n)) == {"0": CONSONANT, "1": RIEUL, "3": CONSONANT, "6": CONSONANT, "7": RIEUL,
                              "8": RIEUL}.get(str(n)[-1], VOWEL)


VALUES = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(), st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]*",
                                                                                      fullmatch=True))


@given(VALUES, st.sampled_from(sorted(PAIRS)), st.sampled_from(["", "`", "'", ")", "()", "]"]))
def test_a_pair_after_a_placeholder_is_resolved_wherever_the_value_is_read(value, pair, tail):
    shown = fill("값 {v}" + tail + pair + " 끝", v=value)
    if ending(str(value) + tail) is not None:
        assert not PAIR.search(shown), f"{shown!r}: a pair left after a value that is read"
    assert shown.startswith(f"값 {value}{tail}") and shown.endswith(" 끝")


@given(st.text(alphabet=st.characters(exclude_characters="{}"), max_size=30), VALUES)
def test_a_template_without_a_pair_is_filled_as_str_format(text, value):
    if not PAIR.search(text):
        assert fill(text + "{v}" + text, v=value) == (text + "{v}" + text).format(v=value)


# --- the catalogues ------------------------------------------------------------------------------------------

def _shown_as_written() -> set[str]:
    """The message ids shown as written, never filled in: a stub's texts, the curriculum's and the conformance
    table's (their extractors are not Python's)."""
    catalogues = pytest.importorskip("kata.i18n.catalogues", reason="Babel is not installed: pip install -e '.[dev]'")
    return {m.id for domain in catalogue_files() for m in catalogues.extract(domain) if m.id and all(
        not path.endswith(".py") or path.startswith("exercises/") for path, _ in m.locations)}


def test_no_korean_message_leaves_a_particle_pair_to_its_reader():
    as_written, left = _shown_as_written(), []
    for domain in catalogue_files():
        catalogue = gettext.translation(domain, i18n.LOCALE_DIR, languages=["ko"], fallback=True)
        for msgid, msgstr in getattr(catalogue, "_catalog", {}).items():
            if isinstance(msgid, str) and msgid:
                pairs = PAIR.findall(msgstr) if msgid in as_written else unresolved(msgstr)
                left += [f"{domain}: {pairs} in {msgstr.splitlines()[0][:90]!r}"] if pairs else []
    assert not left, ("these Korean entries leave a particle pair to the reader: write the pair only right after a "
                      "placeholder ({file}을(를): say chooses it), and elsewhere the particle itself:\n  "
                      + "\n  ".join(left))


# --- the glossary --------------------------------------------------------------------------------------------

def korean_texts() -> dict[str, str]:
    """Every Korean text of the kata, by where it is: each catalogue's translations, the Korean pages and
    notebooks (their cells)."""
    catalogues = pytest.importorskip("kata.i18n.catalogues", reason="Babel is not installed: pip install -e '.[dev]'")
    found = {}
    for path in sorted((i18n.LOCALE_DIR / "ko" / "LC_MESSAGES").glob("*.po")):
        catalog = catalogues._read(path, "ko")
        found |= {f"{path.relative_to(ROOT)}: {m.id.splitlines()[0][:50]!r}": m.string for m in catalog
                  if m.id and isinstance(m.string, str) and m.string}
    for path in [ROOT / "README.ko.md", *sorted((ROOT / "docs" / "ko").glob("*.md"))]:
        found[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "notebooks").glob("*.ko.ipynb")):
        for n, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            found[f"{path.relative_to(ROOT)}, cell {n}"] = "".join(cell["source"])
    return found


def test_the_glossary_holds_in_every_korean_text():
    terms = tomllib.loads(TERMS.read_text(encoding="utf-8"))["term"]
    assert terms and all(t["use"] and t["not"] and t["why"] for t in terms), f"{TERMS}: each term has use, not, why"
    found = []
    for where, text in korean_texts().items():
        for term in terms:
            found += [f"{where}: {word!r}, where the kata writes {term['use']!r} ({term['why']})"
                      for word in term["not"] if word in text]
    assert not found, (f"Korean words the glossary ({TERMS.relative_to(ROOT)}) replaces:\n  " + "\n  ".join(found))


TEMPLATE = re.compile(r"`[^`\n]*\{[^`\n]*`")   # a template shown as code (`{file}을(를)`), not an output


def test_a_korean_page_or_notebook_writes_no_particle_pair():
    found = [f"{where}: {line.strip()[:100]!r}" for where, text in korean_texts().items() if ".po:" not in where
             for line in text.splitlines() if PAIR.search(TEMPLATE.sub("", line))]
    assert not found, "a page is written for its reader: choose each particle:\n  " + "\n  ".join(found)


# --- what a learner reads in a Korean run --------------------------------------------------------------------

MUTANTS = tomllib.loads((ROOT / "tests" / "selftest" / "known_wrong.toml").read_text())["mutant"]


@pytest.mark.slow
@pytest.mark.parametrize("exercise", curriculum.names())
def test_a_korean_run_of_each_known_mistake_prints_no_particle_pair(exercise, pytester, tmp_path, monkeypatch):
    """... and reads as one cause, one block, as in English (tests/selftest/test_known_wrong.py)."""
    from in_process import Verdicts

    from kata.checks.mutants import write_mutant

    monkeypatch.setenv("KATA_LANG", "ko")
    monkeypatch.setattr(i18n, "_chosen", None)
    mutants = [m for m in MUTANTS if m["exercise"] == exercise]
    if not mutants:
        pytest.skip(f"{exercise} has no known-wrong implementation")
    found, silent, causes = [], [], {}
    for n, mutant in enumerate(mutants):
        folder = write_mutant(tmp_path / f"mutant{n}", exercise, *[(e["old"], e["new"]) for e in mutant["edit"]])
        seen = Verdicts()
        result = pytester.runpytest_inprocess("--target", str(folder), str(locate().checks_of(exercise)), "-k",
                                              " or ".join(sorted(set(mutant["checks"]))), "-p", "no:cacheprovider",
                                              plugins=[seen])
        text = result.stdout.str() + result.stderr.str()
        if "실패" not in text:
            silent.append(mutant["mistake"])
        if len(blocks := [b for b in seen.blocks() if not b.todo]) != 1:
            causes[mutant["mistake"]] = [b.message.splitlines()[0][:120] for b in blocks]
        found += [f"{mutant['mistake']}: {line.strip()[:160]!r}" for line in text.splitlines() if PAIR.search(line)]
    assert not silent, f"these known mistakes printed no Korean failure: {silent}"
    assert not causes, f"in Korean, these known mistakes read as other than one cause: {causes}"
    assert not found, f"a Korean run of {exercise}'s known mistakes printed particle pairs:\n  " + "\n  ".join(found)
