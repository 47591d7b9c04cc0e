"""A learner's copy in Korean (issue #21): `kata lang`, `kata release --lang ko`, `kata reset` in a Korean copy.

Each test works on a copy in a temporary folder (the stubs from kata.pristine), never on the
checkout's own exercises/: in a learner's copy it holds their work.
"""

import ast
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kata import commands, curriculum, i18n, pristine
from kata.commands import lang as lang_command
from kata.commands.release import release
from kata.i18n import LANG_FILE, translate_stub
from kata.project import Project, locate

NAMES = curriculum.names()
KOREAN_STUB = "아직 작성되지 않았습니다"   # in every Korean `raise NotImplementedError(...)` message

pytestmark = pytest.mark.skipif(not i18n._entries("ko"), reason="no compiled Korean catalogue of the stubs")


@pytest.fixture
def copy(tmp_path, monkeypatch) -> Path:
    """A learner's checkout holding the untouched (English) stubs, which `kata lang` works on."""
    root = tmp_path / "copy"
    missing = pristine.write_stubs(root / "exercises")
    if missing:
        pytest.skip(f"no pristine stub of {', '.join(missing)} (no .kata/pristine/ snapshot, no git history)")
    monkeypatch.setattr(lang_command, "locate", lambda: Project(root))
    yield root
    i18n.reread_copy_choice()   # the process's own checkout's choice again


def written_by_the_learner(source: str, function: str, code: str) -> str:
    """``source`` with ``function``'s `raise` replaced by the learner's ``code`` (its docstring kept)."""
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function)
    lines = source.splitlines(keepends=True)
    lines[node.body[-1].lineno - 1:node.body[-1].end_lineno] = [code]
    return "".join(lines)


MY_CODE = "    # my own note, in my own words\n    return t.detach().clone().cpu()  # mine\n"


def files(root: Path) -> dict[str, bytes]:
    return {name: (root / "exercises" / f"{name}.py").read_bytes() for name in NAMES}


def test_kata_lang_ko_keeps_the_learners_code_and_kata_lang_en_gives_back_the_english(copy, capsys):
    devices = copy / "exercises" / "devices.py"
    devices.write_text(written_by_the_learner(devices.read_text(), "host_copy", MY_CODE))
    english = files(copy)

    assert commands.main(["lang", "ko"]) == 0
    out = capsys.readouterr().out
    assert (copy / LANG_FILE).read_text() == "ko\n" and i18n.chosen_in(copy) == "ko"
    korean = devices.read_text()
    assert MY_CODE in korean, "the learner's code and comments, kept character for character"
    assert "def host_copy(t):" in korean and "이 머신이 제공하는 가장 좋은 디바이스" in korean
    assert f"`to_device` 함수는 {KOREAN_STUB}" in korean and "is not written yet" not in korean
    assert "`host_copy` is not written yet" not in korean
    for name in NAMES:
        source = (copy / "exercises" / f"{name}.py").read_text()
        assert source != english[name].decode() and ast.parse(source), f"{name}.py in Korean, still Python"
        assert pristine.is_stub(f"{name}.py", source) == (name != "devices"), name
    assert "exercises/devices.py" in out and "한국어" in out, "it says what it did, in Korean"

    assert commands.main(["lang", "en"]) == 0
    assert files(copy) == english, "Korean and back: the English, byte for byte (the learner's code too)"
    assert (copy / LANG_FILE).read_text() == "en\n" and "English" in capsys.readouterr().out
    assert commands.main(["lang", "en"]) == 0 and "nothing to rewrite" in capsys.readouterr().out


def test_kata_lang_leaves_a_file_that_does_not_parse_alone_and_names_it(copy, capsys):
    broken = copy / "exercises" / "model.py"
    broken.write_text("import torch.nn as nn\n\n# my notes\ndef build_model(:\n")
    done = lang_command.switch(copy, "ko")
    assert done.unparsed == ["exercises/model.py"] and broken.read_text().endswith("def build_model(:\n")
    assert "exercises/devices.py" in done.rewritten
    (copy / "exercises" / "sync.py").unlink()
    assert commands.main(["lang", "ko"]) == 1
    captured = capsys.readouterr()
    assert "exercises/model.py" in captured.err and "kata lang ko" in captured.err, "named, with what to do"
    assert "exercises/sync.py" in captured.out and "kata reset sync" in captured.out


def test_kata_reset_in_a_korean_copy_restores_the_korean_stub(copy, capsys, monkeypatch):
    # An English release (its snapshot in English) that the learner switched to Korean.
    pristine.write_snapshot(copy / "exercises", copy)
    monkeypatch.setattr(pristine, "locate", lambda: Project(copy))
    english = pristine.pristine_source("devices")
    lang_command.switch(copy, "ko")
    devices = copy / "exercises" / "devices.py"
    devices.write_text("my work\n")
    assert commands.main(["reset", "devices", "--yes", "--target", str(copy / "exercises")]) == 0
    assert devices.read_text() == translate_stub(english, "ko") != english
    assert pristine.is_stub(devices) and (copy / "exercises" / "devices.py.~1~").read_text() == "my work\n"
    capsys.readouterr()
    assert commands.main(["reset", "devices", "--yes", "--target", str(copy / "exercises")]) == 0
    assert not (copy / "exercises" / "devices.py.~2~").exists(), "the Korean stub is already the pristine one"


def test_kata_release_lang_ko_hands_out_korean_stubs_on_which_every_check_fails(tmp_path):
    out = tmp_path / "class"
    written = release(out, lang="ko")
    assert LANG_FILE in written and (out / LANG_FILE).read_text() == "ko\n"
    assert f"!/{LANG_FILE}" in (out / ".gitignore").read_text(), "the release's language goes into its repository"
    assert "연습 문제" in (out / "README.md").read_text()
    for name in NAMES:
        stub, snapshot = out / "exercises" / f"{name}.py", out / pristine.SNAPSHOT_DIR / f"{name}.py"
        assert pristine.is_stub(stub), pristine.differences(stub)
        assert KOREAN_STUB in stub.read_text() and "is not written yet" not in stub.read_text(), name
        assert snapshot.read_text() == stub.read_text(), f"{name}: the snapshot is the stub as handed out"
        assert pristine.pristine_source(name, out) == stub.read_text()

    # One quick run in the release (its own kata, its .kata-lang): every check of one exercise fails.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST", "KATA_")) and k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    env["PYTHONPATH"] = str(out)
    report = tmp_path / "report.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "exercises/model.py",
                          f"--junitxml={report}"], cwd=out, env=env, capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    suite = ET.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    tests, failed = int(suite.get("tests")), int(suite.get("failures")) + int(suite.get("errors"))
    assert tests > 0 and failed == tests, f"{failed} of {tests} checks fail on the Korean stub:\n{output}"
    assert f"`build_model` 함수는 {KOREAN_STUB}" in output, "the stub's own words, in Korean"


def test_the_checkouts_gitignore_ignores_a_learners_language_choice():
    gitignore = locate().root / ".gitignore"
    if not gitignore.is_file():
        pytest.skip("no .gitignore in this checkout")
    assert LANG_FILE in gitignore.read_text().splitlines()
