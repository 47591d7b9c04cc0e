"""The records (kata/records, records/NAME.py): asked in a process without pytest, read back from a file.

An exercise whose checks read records gets the same verdicts however the answers reach its checks:
asked in the checks' own process (a learner's run), or asked elsewhere and read from a file with
``--records-from`` (grading: the checks' process never imports the code under check). Shown here for
the reference, the stubs and every correct variant of each such exercise, check by check; for
every known-wrong implementation, its named checks, in tests/selftest/test_known_wrong.py. And through
`kata grade` itself (slow): the reference, the stubs, every variant and bundles of known mistakes pass
and fail the same checks there as in a learner's run.
"""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

# Imported before the inner runs, as in test_known_wrong.py (pytester's snapshot of sys.modules).
import hypothesis
import matplotlib.pyplot
import numpy
import PIL.Image
import pytest
import torch
import torchvision.transforms

from kata import curriculum, records, sim
from kata.checks.mutants import write_mutant
from kata.harness import asking
from kata.harness.target import Target
from kata.project import locate
from kata.records.declared import files_of

pytest_plugins = ["pytester"]
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, PIL.Image, torch, torchvision.transforms)

SELFTEST = Path(__file__).parent
WITH_RECORDS = [ex.name for ex in curriculum.exercises() if locate().records_of(ex.name).is_file()]


class Verdicts:
    """An inner run's plugin: each check's outcome."""

    def __init__(self):
        self.outcomes: dict[str, str] = {}
        self.rests: dict[str, set] = {}

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.outcomes[report.nodeid] = "passed" if report.passed else report.outcome
        for key, value in report.user_properties:
            if key == "kata_record":
                self.rests.setdefault(report.nodeid, set()).add((value[0], *value[1]))


def answers_file(folder: Path, exercise: str, seed: int, out: Path, only=None) -> Path:
    """What the grader's sandbox does, here: the records of ``exercise`` (those named in ``only``, else every one)
    asked of ``folder``'s module, as the sandbox asks them (kata.records.ask_exercise)."""
    target = Target(folder)
    ok, _why = sim.support()
    celeba, path = out.parent / "records-celeba", locate().records_of(exercise)
    (out.parent / "records-tmp").mkdir(exist_ok=True)
    context = records.Context(sim.install() if ok else None, out.parent / "records-tmp",
                              lambda: records.small_celeba(celeba))
    skip = set() if only is None else set(records.load(path)) - set(only)
    with records.using(context):
        found = dict(records.ask_exercise(exercise, lambda: target.module(exercise), seed, path, skip))
    found |= {n: f for n, f in records.ask_source(exercise, files_of(folder), seed, path) if n not in skip}
    out.write_text(json.dumps({"seed": seed, "celeba": str(celeba), "records": {exercise: found}}))
    return out


def verdicts(pytester, folder: Path, exercise: str, *more: str) -> Verdicts:
    seen = Verdicts()
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "--target", str(folder),
                                 str(locate().checks_of(exercise)), *more, plugins=[seen])
    assert seen.outcomes, f"no check of {exercise} ran on {folder}"
    return seen


def targets(exercise: str) -> list:
    found = [pytest.param(exercise, locate().solutions, id=f"{exercise}: solutions"),
             pytest.param(exercise, "stubs", id=f"{exercise}: stubs")]   # the pristine_stubs fixture
    found += [pytest.param(exercise, v, id=f"{exercise}: variant {v.name}")
              for v in sorted(SELFTEST.glob("variants/*")) if (v / f"{exercise}.py").is_file()]
    return found


CASES = [case for exercise in WITH_RECORDS for case in targets(exercise)]


@pytest.mark.parametrize("exercise, target", CASES)
def test_the_same_verdicts_asked_here_or_read_from_a_file(pytester, tmp_path, request, exercise, target):
    """Every check of the exercise, both ways (each known-wrong mutant's checks: tests/selftest/test_known_wrong.py)."""
    target = request.getfixturevalue("pristine_stubs") if target == "stubs" else target
    here = verdicts(pytester, target, exercise)
    path = answers_file(target, exercise, asking.SEED, tmp_path / "answers.json")
    read = verdicts(pytester, target, exercise, "--records-from", str(path))
    assert read.outcomes == here.outcomes
    assert read.rests == here.rests


def test_the_reference_passes_on_answers_drawn_from_any_seed(pytester, tmp_path):
    for exercise in WITH_RECORDS:
        path = answers_file(locate().solutions, exercise, 8086, tmp_path / f"{exercise}.json")
        read = verdicts(pytester, locate().solutions, exercise, "--records-from", str(path))
        failed = [n for n, o in read.outcomes.items() if o not in ("passed", "skipped")]
        assert not failed, failed


def test_answers_that_disagree_with_their_inputs_or_the_wire_are_failures(pytester, tmp_path):
    exercise = WITH_RECORDS[0]
    path = answers_file(locate().solutions, exercise, 7, tmp_path / "answers.json")
    found = json.loads(path.read_text())
    name = next(iter(found["records"][exercise]))
    found["records"][exercise][name]["inputs"] = "0" * 16           # answers to other inputs
    other = next(n for n in found["records"][exercise] if n != name)
    for case in found["records"][exercise][other]["cases"]:
        case["data"] = {"t": "tensor", "dtype": "float32", "shape": [10**6], "device": "cpu", "v": {}}  # no values
    kinds = iter(["KeyboardInterrupt", "ExceptionGroup", "SystemExit", "UnicodeDecodeError", "NoSuchError"])
    for more in [n for n in found["records"][exercise] if n not in (name, other)][:5]:
        kind = next(kinds)   # a kind no answer may make the checks' process raise as such
        found["records"][exercise][more]["cases"] = [{"error": f"{kind}: no", "kind": kind}
                                                     for _ in found["records"][exercise][more]["cases"]]
    path.write_text(json.dumps(found))
    read = verdicts(pytester, locate().solutions, exercise, "--records-from", str(path))
    assert any(o == "failed" for o in read.outcomes.values())
    assert all(o in ("passed", "failed", "skipped") for o in read.outcomes.values())


def test_a_records_process_never_imports_pytest_or_the_checks():
    code = (
        "import sys\n"
        "from kata import records\n"
        "from kata.harness.target import Target\n"
        "from kata.project import locate\n"
        f"for exercise in {WITH_RECORDS!r}:\n"
        "    for rec in records.load(locate().records_of(exercise)).values():\n"
        "        if not rec.accelerator:\n"
        "            records.ask_all(rec, Target(locate().solutions).module(exercise), 1, exercise)\n"
        "bad = sorted(m for m in sys.modules if m == 'pytest' or m.startswith(('_pytest', 'kata.checks',"
        " 'kata.harness.plugin')))\n"
        "assert not bad, bad\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


# --- through `kata grade`: the same checks pass and fail as in a learner's run ------------------------------

MUTANTS = tomllib.loads((SELFTEST / "known_wrong.toml").read_text())["mutant"]
BUNDLES = 3   # hand-ins of known mistakes, each the k-th mistake of every exercise (its other modules missing)


def hand_ins(root: Path, stubs: Path) -> dict[str, Path]:
    """The reference, the (pristine) ``stubs``, each variant and BUNDLES bundles of known mistakes, as hand-in
    folders."""
    found = {"solutions": locate().solutions, "stubs": stubs}
    found |= {f"variant-{v.name}": v for v in sorted(SELFTEST.glob("variants/*")) if v.is_dir()}
    for k in range(BUNDLES):
        for exercise in curriculum.names():
            mine = [m for m in MUTANTS if m["exercise"] == exercise]
            if mine:
                m = mine[k * len(mine) // BUNDLES]
                write_mutant(root / f"mutants-{k}", exercise, *[(e["old"], e["new"]) for e in m["edit"]])
        found[f"mutants-{k}"] = root / f"mutants-{k}"
    return found


@pytest.mark.slow
def test_the_same_checks_pass_here_and_through_kata_grade(pytester, tmp_path, monkeypatch, pristine_stubs):
    """Each hand-in graded by `kata grade` (records in its sandbox, the checks in the grader's process), on the seed a
    learner's run draws: each weighted check passes there exactly where it passes in a learner's run."""
    from test_grade import kata

    from kata.grading import runner

    subs = hand_ins(tmp_path / "hand-ins", pristine_stubs)
    monkeypatch.setattr(runner, "new_seed", lambda: asking.SEED)
    assert kata("grade", *subs.values(), "--out", tmp_path / "out", "--jobs", "2", "--quiet") == 0
    differ = {}
    for name, folder in subs.items():
        graded = json.loads((tmp_path / "out" / "results" / f"{folder.name}.json").read_text())["tests"]
        there = {(t["tags"][0], t["name"].split(": ", 1)[1]) for t in graded if t["max_score"] and
                 t["status"] == "passed"}
        weighted = {(t["tags"][0], t["name"].split(": ", 1)[1]) for t in graded if t["max_score"]}
        here, ran = set(), set()   # a check skipped here (the machine's doing: no fresh process) is no verdict
        for exercise in curriculum.names():
            if (folder / f"{exercise}.py").is_file():
                seen = verdicts(pytester, folder, exercise)
                here |= {(exercise, n.split("::", 1)[1]) for n, o in seen.outcomes.items() if o == "passed"}
                ran |= {(exercise, n.split("::", 1)[1]) for n, o in seen.outcomes.items() if o != "skipped"}
        ran |= {(ex, check) for ex, check in weighted if not (folder / f"{ex}.py").is_file()}   # not handed in
        assert weighted and (there == weighted if name == "solutions" else True), (name, sorted(weighted - there))
        if here & weighted != there & ran:
            differ[name] = {"here only": sorted(here & weighted - there), "graded only": sorted(there & ran - here)}
    assert not differ, json.dumps(differ, indent=1)
