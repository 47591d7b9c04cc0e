"""The records (kata/records, records/NAME.py): asked in a process without pytest, read back from a file.

An exercise whose checks read records gets the same verdicts however the answers reach its checks:
asked in the checks' own process (a learner's run), or asked elsewhere and read from a file with
``--records-from`` (grading: the checks' process never imports the code under check). Shown here for
the reference, the stubs and every correct variant of each such exercise, check by check. And through
`kata grade` itself (slow): the reference, the stubs, every variant and every known mistake
(tests/selftest/known_wrong.toml, in bundles) pass and fail the same checks there as in a learner's run.
"""

import json
import re
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
from in_process import verdicts

from kata import curriculum, records, sim
from kata.checks.mutants import write_mutant
from kata.harness import asking, outcomes
from kata.harness.target import Target
from kata.i18n import say
from kata.project import locate
from kata.records.declared import files_of

pytest_plugins = ["pytester"]
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, PIL.Image, torch, torchvision.transforms)

SELFTEST = Path(__file__).parent
WITH_RECORDS = [ex.name for ex in curriculum.exercises() if locate().records_of(ex.name).is_file()]


def answers_file(folder: Path, exercise: str, seed: int, out: Path) -> Path:
    """What the grader's sandbox does, here: the records of ``exercise`` asked of ``folder``'s module, as the sandbox
    asks them (kata.records.ask_exercise)."""
    target = Target(folder)
    ok, _why = sim.support()
    celeba, path = out.parent / "records-celeba", locate().records_of(exercise)
    (out.parent / "records-tmp").mkdir(exist_ok=True)
    context = records.Context(sim.install() if ok else None, out.parent / "records-tmp",
                              lambda: records.small_celeba(celeba))
    with records.using(context):
        found = dict(records.ask_exercise(exercise, lambda: target.module(exercise), seed, path))
    found |= dict(records.ask_source(exercise, files_of(folder), seed, path))
    out.write_text(json.dumps({"seed": seed, "celeba": str(celeba), "records": {exercise: found}}))
    return out


def targets(exercise: str) -> list:
    found = [pytest.param(exercise, locate().solutions, id=f"{exercise}: solutions"),
             pytest.param(exercise, "stubs", id=f"{exercise}: stubs")]   # the pristine_stubs fixture
    found += [pytest.param(exercise, v, id=f"{exercise}: variant {v.name}")
              for v in sorted(SELFTEST.glob("variants/*")) if (v / f"{exercise}.py").is_file()]
    return found


CASES = [case for exercise in WITH_RECORDS for case in targets(exercise)]


@pytest.mark.parametrize("exercise, target", CASES)
def test_the_same_verdicts_asked_here_or_read_from_a_file(pytester, tmp_path, request, in_process, exercise, target):
    """Every check of the exercise, both ways (each known-wrong mutant's checks: through `kata grade`, below)."""
    target = request.getfixturevalue("pristine_stubs") if target == "stubs" else target
    here = in_process.verdicts(pytester, target, exercise)
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


def bundles() -> list[list[dict]]:
    """Every known mistake in as few hand-ins as a hand-in's one module per exercise allows: the k-th holds the k-th
    mistake of each exercise that has one (its other modules missing), so each mistake is graded exactly once."""
    mine = [[m for m in MUTANTS if m["exercise"] == exercise] for exercise in curriculum.names()]
    return [[found[k] for found in mine if k < len(found)] for k in range(max(map(len, mine)))]


def hand_ins(root: Path, stubs: Path) -> dict[str, Path]:
    """The reference, the (pristine) ``stubs``, each variant and the bundles of known mistakes, as hand-in folders."""
    found = {"solutions": locate().solutions, "stubs": stubs}
    found |= {f"variant-{v.name}": v for v in sorted(SELFTEST.glob("variants/*")) if v.is_dir()}
    for k, bundle in enumerate(bundles()):
        for m in bundle:
            write_mutant(root / f"mutants-{k}", m["exercise"], *[(e["old"], e["new"]) for e in m["edit"]])
        found[f"mutants-{k}"] = root / f"mutants-{k}"
    return found


def weighted(graded: list[dict], which=lambda test: True) -> set[tuple[str, str]]:
    """(exercise, check) of each weighted check of a graded hand-in's results (Gradescope's) that ``which`` keeps."""
    return {(t["tags"][0], t["name"].split(": ", 1)[1]) for t in graded if t["max_score"] and which(t)}


def out_of_time(test: dict) -> bool:
    """A graded check that failed where the grader's one time rule stopped a record it reads (records.ask_exercise):
    the machine's doing (a known mistake's records may take several times the reference's), as a skip is here."""
    said = (say("did not finish within {seconds:g} s", seconds=records.RECORD_SECONDS),
            say("not asked: {n} records of this exercise ran out of time", n=records.EXERCISE_TIMEOUTS))
    return test["status"] != "passed" and any(text in test.get("output", "") for text in said)


STUB_AT = re.compile(r"^\S+\.py: (?=`[\w.]+` is not (written|set) yet)")   # a stub's file, as each run names it


def feedback_causes(feedback: str, exercise: str) -> list[str]:
    """The first line of each block of ``exercise``'s section of a grader's feedback (kata.grading.reports)."""
    label = f"## {curriculum.get(exercise).label}: "
    lines = feedback.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(label)) + 1
    end = next((k for k in range(start, len(lines)) if lines[k].startswith("## ")), len(lines))
    return [lines[k + 1] for k in range(start, end - 1) if lines[k] in ("```text", "````text")]


def learner_causes(seen, exercise: str, every: set) -> list[str]:
    """The first line of each block a learner's run shows, of its checks the grader weighs (``every``)."""
    found = [r for r in outcomes.records(seen.reports) if (exercise, r.check) in every]
    return [b.message.splitlines()[0] if b.message else "" for b in outcomes.summarize(found).blocks]


@pytest.mark.slow
@pytest.mark.timeout(1800)   # the grading, and the runs here where test_known_wrong.py has not run them yet
def test_the_same_checks_pass_here_and_through_kata_grade(pytester, tmp_path, monkeypatch, pristine_stubs,
                                                          in_process):
    """Each hand-in graded by `kata grade` (records in its sandbox, the checks in the grader's process), on the seed a
    learner's run draws: each weighted check passes there exactly where it passes in a learner's run, and the
    feedback shows each exercise's causes as a learner's run does, one block each, in the same order. The runs here
    are the session's (the fixture `in_process`): a --slow session has run them all already, for the tests above
    and test_known_wrong.py."""
    from test_grade import kata

    from kata.grading import runner

    subs = hand_ins(tmp_path / "hand-ins", pristine_stubs)
    mistakes = {(f"mutants-{k}", m["exercise"]): f"{m['exercise']}: {m['mistake']}"
                for k, bundle in enumerate(bundles()) for m in bundle}
    monkeypatch.setattr(runner, "new_seed", lambda: asking.SEED)
    assert kata("grade", *subs.values(), "--out", tmp_path / "out", "--jobs", "2", "--quiet") == 0
    differ, stopped, blocks = {}, {}, {}
    for name, folder in subs.items():
        results = json.loads((tmp_path / "out" / "results" / f"{folder.name}.json").read_text())
        graded = results["tests"]
        every, there = weighted(graded), weighted(graded, lambda test: test["status"] == "passed")
        assert every and (there == every if name == "solutions" else True), (name, sorted(every - there))
        assert name != "solutions" or {ex for ex, _check in every} == set(curriculum.names()), results["output"][:3000]
        timed = weighted(graded, out_of_time)
        here, ran = set(), set()   # a check skipped here (the machine's doing: no fresh process) is no verdict
        for exercise in curriculum.names():
            if (folder / f"{exercise}.py").is_file():
                seen = in_process.verdicts(pytester, folder, exercise)
                here |= {(exercise, n.split("::", 1)[1]) for n, o in seen.outcomes.items() if o == "passed"}
                ran |= {(exercise, n.split("::", 1)[1]) for n, o in seen.outcomes.items() if o != "skipped"}
                weighed = {(ex, check) for ex, check in every if ex == exercise}
                key = mistakes.get((name, exercise), f"{name}: {exercise}")
                if not (weighed and weighed <= ran - timed):
                    continue
                graded, learners = feedback_causes(results["output"], exercise), learner_causes(seen, exercise, every)
                if name == "stubs":   # a stub's file, named where each run has it (a learner's run: a local path)
                    graded, learners = ([STUB_AT.sub("", line) for line in lines] for lines in (graded, learners))
                if graded != learners:
                    blocks[key] = {"graded": graded, "learner's run": learners}
        ran |= {(ex, check) for ex, check in every if not (folder / f"{ex}.py").is_file()}   # not handed in
        ran -= timed   # nor one whose records ran out of the grader's time there
        stopped |= {name: sorted(timed)} if timed else {}
        mine, theirs = here & every & ran, there & ran
        if mine != theirs:
            differ[name] = {"here only": sorted(mine - theirs), "graded only": sorted(theirs - mine)}
    assert not differ, json.dumps({"differ": differ, "no verdict (out of the grader's time)": stopped}, indent=1)
    assert not blocks, "the grader's feedback shows other causes than a learner's run:\n" + json.dumps(blocks, indent=1)
