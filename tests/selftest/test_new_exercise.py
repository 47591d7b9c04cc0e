"""One more exercise, added to a copy of the kata by the files docs/developing.md lists, and nothing else.

The demo exercise, ``extra``, is written in the shape of every exercise: a stub, a reference, records
(``records/extra.py``: what its checks ask the module, on inputs drawn from a seed), checks that read
``extra.cases(...)`` and ``extra.answer(...)`` and never call the module, its curriculum entry, its Korean,
its section of CONTRACT.md and its answer keys. The files the fixture writes are compared with the numbered
list of "Add an exercise" (docs/developing.md and docs/ko/developing.md): the page and this test can't drift
apart. Then the one command that writes what they make (the compiled catalogue, the READMEs' tables) runs, and
the copy is used as a learner and a teacher would: its checks pass on the reference (``-m extra``), stop at
the stub in English and in Korean, ``kata list`` lists it, and ``kata grade`` gives its points to a hand-in
holding a correct ``extra.py`` alone. The kata's own self-checks of an exercise pass on it there, and say what it
lacks (correct variants, known mistakes: worth writing, not needed).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kata import curriculum
from kata.project import locate

ROOT = locate().root
# It comes after the curriculum's last: its number is one more than theirs, whatever their count.
NUMBER = len(curriculum.names()) + 1
POINTS = 5

# --- the demo exercise: each text once, English and Korean -----------------------------------------------------

MODULE_DOC = (f"Exercise {NUMBER} · extra: twice a tensor, where it lives.\n\n"
              "Doubling is one operation on a tensor; where its result lives is the lesson of this demo\n"
              "exercise, which shows the shape of every exercise in a few lines.\n\n"
              "Run `pytest exercises/extra.py` to check just this file, and `kata hint extra`\n"
              "when you are stuck.")
DOUBLE_DOC = ("Return twice the tensor `t`, as a new tensor.\n\n"
              "Specification:\n\n"
              "- `t` is a tensor of any shape and floating dtype, on any device; the\n"
              "  result has its shape, its dtype and its device (nothing moves).\n"
              "- The result is a new tensor: `t` keeps its values, whatever the caller\n"
              "  does with the result afterwards.\n"
              "- Use one operation of PyTorch's, on the device where `t` lives.\n\n"
              "Concept: an operation on a tensor runs where the tensor lives, and its\n"
              "result lives there too.")
RAISE = "`double` is not written yet: see its docstring, and `kata hint extra double`"
TITLE = "Twice a tensor, where it lives"
TEACHES = "a demo: an operation on a tensor runs, and leaves its result, where the tensor lives"
HINTS = ["Where does the result of an operation on a tensor live? Does the operation change the tensor it was\n"
         "given, or make a new one? Try it in a Python shell.",
         "The API this exercise is about:\n- torch.mul: https://pytorch.org/docs/stable/generated/torch.mul.html",
         "One line: return what a single operation on `t` makes."]
TWICE = ("double(t) must return twice t, a tensor of t's shape, dtype and device\n"
         "  for t = {t}, it gave {got}")
UNTOUCHED = "double(t) changed t: return a new tensor and leave t as it was\n  t was {t}, and is {after}"

KOREAN = {
    MODULE_DOC: (f"연습 문제 {NUMBER} · extra: 텐서의 두 배, 텐서가 있는 곳에서.\n\n"
                 "두 배로 만들기는 텐서에 하는 연산 하나입니다. 그 결과가 어디에 있는지가 이 시연용\n"
                 "연습 문제의 교훈이며, 이 문제는 모든 연습 문제의 모양을 몇 줄로 보여 줍니다.\n\n"
                 "`pytest exercises/extra.py`를 실행하면 이 파일만 검사합니다. 막히면 `kata hint extra`를\n"
                 "보세요."),
    DOUBLE_DOC: ("텐서 `t`의 두 배를 새 텐서로 돌려줍니다.\n\n"
                 "명세:\n\n"
                 "- `t`는 모양과 부동소수점 dtype이 무엇이든, 어느 디바이스에 있든 상관없는\n"
                 "  텐서입니다. 결과는 같은 모양, 같은 dtype, 같은 디바이스를 가집니다(아무것도\n"
                 "  옮기지 않습니다).\n"
                 "- 결과는 새 텐서입니다: 호출한 쪽이 나중에 결과로 무엇을 하든 `t`는 제 값을\n"
                 "  지킵니다.\n"
                 "- `t`가 있는 디바이스에서, PyTorch의 연산 하나를 쓰세요.\n\n"
                 "개념: 텐서에 하는 연산은 텐서가 있는 곳에서 실행되고, 그 결과도 거기에 있습니다."),
    RAISE: "`double` 함수는 아직 작성되지 않았습니다: 독스트링과 `kata hint extra double` 명령을 참고하세요",
    TITLE: "텐서의 두 배, 텐서가 있는 곳에서",
    TEACHES: "시연: 텐서에 하는 연산은 텐서가 있는 곳에서 실행되고, 그 결과도 거기에 남는다",
    HINTS[0]: "텐서에 한 연산의 결과는 어디에 있나요? 연산은 받은 텐서를 바꾸나요, 아니면 새 텐서를\n"
              "만드나요? Python 셸에서 해 보세요.",
    HINTS[1]: "이 연습 문제가 다루는 API:\n- torch.mul: https://pytorch.org/docs/stable/generated/torch.mul.html",
    HINTS[2]: "한 줄: `t`에 연산 하나를 해서 만든 것을 돌려주세요.",
    TWICE: ("double(t)는 t의 두 배를, t와 같은 모양, dtype, 디바이스의 텐서로 돌려줘야 합니다\n"
            "  t = {t}에 대해 {got}을(를) 돌려주었습니다"),
    UNTOUCHED: ("double(t)가 t를 바꾸었습니다: 새 텐서를 돌려주고 t는 그대로 두세요\n"
                "  t는 {t}(이)었는데, 이제 {after}입니다"),
}

STUB = f'''"""{MODULE_DOC}
"""


def double(t):
    """{textwrap.indent(DOUBLE_DOC, "    ").lstrip()}
    """
    raise NotImplementedError({json.dumps(RAISE)})
'''
SOLUTION = '''"""Reference solution: twice a tensor, where it lives."""


def double(t):
    return t.mul(2)
'''
RECORDS = '''"""Records of the demo exercise, extra: what its checks ask the module, on inputs drawn from a seed."""

from kata.records import WORK, record


@record(lambda draw: [[draw.int(-40, 40) / 4 for _ in range(draw.int(1, 4))] for _ in range(6)], rests=WORK)
def doubled(extra, values):
    """double of a drawn float tensor, and the tensor after the call"""
    import torch

    t = torch.tensor(values)
    return {"out": extra.double(t), "t_after": t}
'''
CHECKS = f'''"""Checks for the demo exercise, extra: twice a tensor, where it lives.

Each check reads the answers of the record ``doubled`` (records/extra.py) and asserts its one rule on them.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import torch

from kata.checks.messages import describe
from kata.i18n import N_, say

TWICE = N_({json.dumps(TWICE)})
UNTOUCHED = N_({json.dumps(UNTOUCHED)})


def test_double_is_twice_the_tensor_where_it_lives(extra):
    for case in extra.cases("doubled"):
        t, got = torch.tensor(case.args[0]), case.answer["out"]
        right = (isinstance(got, torch.Tensor) and got.dtype == t.dtype and got.device == t.device
                 and torch.equal(got, t * 2))
        assert right, say(TWICE, t=describe(t), got=describe(got))


def test_double_leaves_its_tensor_as_it_was(extra):
    values = extra.cases("doubled")[0].args[0]
    after = extra.answer("doubled", values)["t_after"]
    assert torch.equal(after, torch.tensor(values)), say(UNTOUCHED, t=values, after=describe(after))
'''
ENTRY = f'''
[[exercise]]
name = "extra"
title = {json.dumps(TITLE)}
teaches = {json.dumps(TEACHES)}
points = {POINTS}
names = ["double"]
hints.double = [{", ".join(json.dumps(h, ensure_ascii=False) for h in HINTS)}]
'''
CONTRACT = '''
## extra.py — twice a tensor, where it lives
- `double(t) -> Tensor`: twice `t`, a new tensor of `t`'s shape, dtype and device; `t` keeps its values.
'''
ANSWER_KEYS = '''
[extra.keys]
"t.mul(2)" = "the answer"
".mul(" = "the operation, as code"
"mul(2)" = "the operation and its factor"

[extra.also]
"t * 2" = "the answer, with an operator"
"2 * t" = "the answer, with an operator"
"t + t" = "the answer, as a sum"
'''


def po_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# The header `update` writes (its dates fixed: a catalogue without them is compiled with the time it is read).
HEADER = {"Project-Id-Version": "device-kata VERSION", "POT-Creation-Date": "2026-12-04 00:00+0000",
          "PO-Revision-Date": "2026-12-04 00:00+0000", "Language": "ko", "Plural-Forms": "nplurals=1; plural=0;",
          "MIME-Version": "1.0", "Content-Type": "text/plain; charset=utf-8", "Content-Transfer-Encoding": "8bit"}
CATALOGUE = ('msgid ""\nmsgstr ""\n' + "".join(f"{po_string(f'{k}: {v}' + chr(10))}\n" for k, v in HEADER.items())
             + "\n" + "".join(f"msgid {po_string(en)}\nmsgstr {po_string(ko)}\n\n" for en, ko in KOREAN.items()))


def append(text: str):
    return lambda path: path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def new(text: str):
    return lambda path: path.write_text(text, encoding="utf-8")


# What the demo writes, by the name docs/developing.md gives each file.
WRITES = {
    "exercises/NAME.py": new(STUB),
    "solutions/NAME.py": new(SOLUTION),
    "records/NAME.py": new(RECORDS),
    "tests/test_NAME.py": new(CHECKS),
    "kata/curriculum.toml": append(ENTRY),
    "kata/locale/ko/LC_MESSAGES/exercise-NAME.po": new(CATALOGUE),
    "CONTRACT.md": append(CONTRACT),
    "tests/selftest/answer_keys.toml": append(ANSWER_KEYS),
}


def listed(page: Path) -> list[str]:
    """The files "Add an exercise" numbers, in order (the first section of the page that numbers files)."""
    text = page.read_text(encoding="utf-8")
    section = re.search(r"^## (?:Add an exercise|연습 문제 더하기)\n(.*?)^## ", text, re.M | re.S)
    assert section, f"{page.relative_to(ROOT)} has no section on adding an exercise"
    return re.findall(r"^\d+\. `([^`]+)`", section[1], re.M)


# --- the copy ---------------------------------------------------------------------------------------------------

COPIED = ("kata", "exercises", "solutions", "tests", "records", "conftest.py", "pyproject.toml", "CONTRACT.md",
          "README.md", "README.ko.md")


def files(root: Path) -> dict[str, bytes]:
    """The copy's files, bytecode caches aside (written where PYTHONDONTWRITEBYTECODE is unset, as in CI)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {name for name, data in after.items() if before.get(name) != data} | (set(before) - set(after))


def run_in(root: Path, *command: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KATA_"))}
    clean.update(PYTHONPATH=str(root), COLUMNS="100", **env)   # the copy's kata, ahead of the installed one
    return subprocess.run([sys.executable, *command], cwd=root, env=clean, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A copy of the kata with the demo exercise written by the listed files alone: (root, the files written by
    hand, the files the catalogue tool wrote then)."""
    pytest.importorskip("babel", reason="Babel compiles the catalogues: pip install -e '.[dev]'")
    root = tmp_path_factory.mktemp("new-exercise") / "device-kata"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", ".kata-progress.json")
    for name in COPIED:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, root / name, **(
            {"ignore": ignore} if (ROOT / name).is_dir() else {}))
    before = files(root)
    for doc_name, write in WRITES.items():
        path = root / doc_name.replace("NAME", "extra")
        write(path)
    written = files(root)
    run = run_in(root, "-m", "kata.i18n.catalogues", "compile", "exercise-extra")
    assert run.returncode == 0, run.stdout + run.stderr
    return root, changed(before, written), changed(written, files(root))


def test_docs_developing_md_lists_the_files_this_test_writes_at_most_eight():
    english, korean = listed(ROOT / "docs" / "developing.md"), listed(ROOT / "docs" / "ko" / "developing.md")
    assert english == list(WRITES), ("docs/developing.md's \"Add an exercise\" numbers the files this test writes "
                                     f"(change both together):\n  the page: {english}\n  the test: {list(WRITES)}")
    assert korean == english, "docs/ko/developing.md numbers the same files as docs/developing.md"
    assert len(english) <= 8, "a new exercise is at most 8 files written by hand"


@pytest.mark.slow
def test_the_demo_exercise_is_those_files_and_nothing_else(copy):
    _root, by_hand, _made = copy
    assert by_hand == {name.replace("NAME", "extra") for name in WRITES}, sorted(by_hand)


@pytest.mark.slow
def test_the_catalogue_tool_writes_the_rest_and_finds_the_korean_complete(copy):
    root, _by_hand, made = copy
    assert made == {"kata/locale/ko/LC_MESSAGES/exercise-extra.mo", "README.md", "README.ko.md"}, made
    row = rf"^\| {NUMBER} \| extra +\| {{}} \|$"
    assert re.search(row.format(re.escape(TEACHES)), (root / "README.md").read_text(), re.M)
    assert re.search(row.format(re.escape(KOREAN[TEACHES])), (root / "README.ko.md").read_text(), re.M)
    run = run_in(root, "-m", "kata.i18n.catalogues", "check", "exercise-extra")
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.slow
def test_its_checks_pass_on_the_reference_and_stop_at_the_stub_in_english_and_korean(copy):
    root, *_ = copy
    run = run_in(root, "-m", "pytest", "-p", "no:cacheprovider", "solutions", "-m", "extra")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert re.search(r"\b2 passed, \d+ deselected", out), out
    assert re.search(rf"{NUMBER}\. extra +2/2 +passed +done", out), out

    run = run_in(root, "-m", "pytest", "-p", "no:cacheprovider", "exercises/extra.py")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert f"exercises/extra.py: {RAISE}" in out, out
    assert re.search(rf"{NUMBER}\. extra +0/2 +passed +not started", out), out

    run = run_in(root, "-m", "pytest", "-p", "no:cacheprovider", "exercises/extra.py", KATA_LANG="ko")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert f"exercises/extra.py: {KOREAN[RAISE]}" in out, out


# The kata's own self-checks that hold each exercise (its stub and hints, its answer keys, its Korean, the READMEs'
# tables, CONTRACT.md, its records both ways), run in the copy on the demo; and those that say what it lacks.
SELF_CHECKS = ("test_stubs.py", "test_target.py", "test_i18n.py", "test_curriculum.py", "test_correct_variants.py",
               "test_known_wrong.py", "test_records.py")


@pytest.mark.slow
def test_the_kata_s_own_self_checks_of_an_exercise_pass_on_it_and_say_what_it_lacks(copy):
    root, *_ = copy
    run = run_in(root, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *(f"tests/selftest/{f}" for f in SELF_CHECKS),
                 "-k", "extra or readme or contract or each_exercise")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-5000:]
    assert re.search(r"\b[1-9]\d* passed", out), out[-3000:]
    assert "extra has no correct variant" in out and "extra has no known-wrong implementation" in out, out[-3000:]


@pytest.mark.slow
def test_kata_list_shows_it_in_both_languages(copy):
    root, *_ = copy
    run = run_in(root, "-m", "kata", "list")
    assert run.returncode == 0 and re.search(rf"{NUMBER}\. extra +{re.escape(TITLE)}", run.stdout), \
        run.stdout + run.stderr
    run = run_in(root, "-m", "kata", "list", KATA_LANG="ko")
    assert run.returncode == 0 and re.search(rf"{NUMBER}\. extra +{re.escape(KOREAN[TITLE])}", run.stdout), \
        run.stdout + run.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kata_grade_gives_its_points_to_a_correct_hand_in(copy):
    root, *_ = copy
    hand_in = root.parent / "hand-ins" / "only-extra"
    hand_in.mkdir(parents=True)
    (hand_in / "extra.py").write_text(SOLUTION)
    out = root.parent / "graded"
    run = run_in(root, "-m", "kata", "grade", str(hand_in), "--out", str(out), "--jobs", "1", "--quiet")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(out / "grades.csv", newline="") as f:
        row = {r["submission"]: r for r in csv.DictReader(f)}["only-extra"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["max"]["extra"] == POINTS, summary["max"]
    assert float(row["extra"]) == POINTS, row
    assert float(row["total"]) == POINTS, row
