"""`kata grade`: a class's submissions graded in bulk, a grade a teacher can defend.

One `kata grade` run (module fixture `graded`) grades a small class with --jobs 2:
a copy of the solutions, an independent correct implementation, a known-wrong
submission in a zip, one with a different breakage in each module that carries
a conftest.py, pytest.ini and sitecustomize.py which would mark everything
passed, an empty folder, and untouched stubs with two kinds of attack (taking
the reference solutions; forging their verdicts). The tests read what it wrote.
The helpers are tested on their own, without running the checks. The full
battery of attacks, the fallback sandboxes and the Gradescope bundle are in
test_grade_attacks.py (slow).
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_grade_samples import INDEPENDENT, attack, sources, write

from kata import curriculum
from kata.checks.mutants import mutated
from kata.commands import _args
from kata.commands import grade as grade_command
from kata.commands import gradescope as gradescope_command
from kata.commands import release as release_command
from kata.grading import channel, events, intake, reports, scoring, vetting
from kata.grading.results import Graded, status_of
from kata.project import locate

NAMES = curriculum.names()
POINTS = {ex.name: ex.points for ex in curriculum.exercises()}
FULL = sum(POINTS.values())
TEST_TIMEOUT = 8  # seconds per check: small (a hang costs it), well above what any check needs

pytestmark = pytest.mark.timeout(1200)


def kata(*argv: str) -> int:
    """`kata grade|gradescope|release ...`, through the commands' own parsers."""
    parser = argparse.ArgumentParser(prog="kata")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (grade_command, gradescope_command, release_command):
        module.add_parser(sub).set_defaults(run=module.run)
    args = parser.parse_args([str(a) for a in argv])
    return args.run(args)


def full(except_=()) -> dict[str, float]:
    return {ex: float(POINTS[ex]) for ex in NAMES if ex not in except_}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade the class once; return (out folder, grades.csv rows by name, summary.json)."""
    root = tmp_path_factory.mktemp("class")
    subs, out = root / "submissions", root / "out"

    write(subs / "good", sources("solutions"))
    (subs / "good" / "notes.txt").write_text("extra files are ignored")
    write(subs / "independent", dict(INDEPENDENT))

    # Known-wrong code, zipped as a student would: wrong/exercises/*.py inside the zip.
    wrong = write(root / "unzipped" / "wrong" / "exercises", sources(
        "solutions", data=mutated("data", ("SMILING = 31", "SMILING = 18")),
        model=mutated("model", ("    model.add_module('sigmoid', nn.Sigmoid())\n", ""))))
    with zipfile.ZipFile(subs / "wrong.zip", "w") as archive:
        for name in NAMES:
            archive.write(wrong / f"{name}.py", f"wrong/exercises/{name}.py")
        archive.writestr("__MACOSX/wrong/._data.py", "junk")

    mixed = write(subs / "mixed" / "exercises", sources(
        "solutions", devices="raise SystemExit(3)\n", data="def get_smile(attr:\n",
        model=mutated("model", ("def build_model()", "def build_model(channels)")), training=None,
        sync=(locate().exercises / "sync.py").read_text()))
    # What would make every check pass if it were ever loaded:
    (mixed / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
    (mixed / "pytest.ini").write_text("[pytest]\naddopts = -p no:kata --co\n")
    (mixed / "sitecustomize.py").write_text("import os\nos.environ['PYTEST_ADDOPTS'] = '--co'\n")

    (subs / "empty").mkdir()

    # Untouched stubs with attacks: the reference solutions, and forged verdicts (one way per module).
    write(subs / "stubs-answers", {name: attack("answers-kata-file", name) + source
                                   for name, source in sources("stubs").items()})
    forgers = dict(zip(NAMES, ("forge-os-write", "forge-report", "forge-brute", "forge-gc", "references-module",
                               "answers-locate"), strict=False))
    write(subs / "stubs-forged", {name: attack(forgers.get(name, "forge-plugin"), name) + source
                                  for name, source in sources("stubs").items()})

    paths = sorted(str(p) for p in subs.iterdir())
    code = kata("grade", *paths, "--out", out, "--jobs", "2", "--test-timeout", TEST_TIMEOUT, "--timeout", "200",
                "--memory", "2500", "--quiet")
    assert code == 0
    with open(out / "grades.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    summary = json.loads((out / "summary.json").read_text())
    return out, rows, summary


def points(rows, name) -> dict[str, float]:
    return {ex: float(rows[name][ex]) for ex in NAMES}


def results(out: Path, name: str) -> dict[str, dict]:
    """The Gradescope tests of a submission, by check name."""
    data = json.loads((out / "results" / f"{name}.json").read_text())
    return {t["name"]: t for t in data["tests"]}


def outputs_of(out: Path, name: str, exercise: str) -> list[str]:
    return [t["output"] for t in results(out, name).values() if exercise in t["tags"] and t.get("status") == "failed"]


# --- the class run ---------------------------------------------------------------


def test_a_copy_of_the_solutions_scores_full(graded):
    out, rows, summary = graded
    assert points(rows, "good") == full(), rows["good"]
    assert float(rows["good"]["total"]) == float(rows["good"]["max"]) == FULL
    assert rows["good"]["percent"] == "100.0" and rows["good"]["status"] == "ok", rows["good"]
    assert summary["max"] == {ex: float(p) for ex, p in POINTS.items()}
    assert summary["submissions"]["good"]["total"] == FULL and not summary["submissions"]["good"]["flagged"]
    assert not (out / "feedback" / "good.md").read_text().count("### "), "nothing to fix, nothing listed"


def test_an_independent_correct_implementation_scores_full_and_is_not_flagged(graded):
    _, rows, _ = graded
    assert points(rows, "independent") == full() and rows["independent"]["status"] == "ok", rows["independent"]


def test_known_wrong_code_in_a_zip_loses_points_in_its_exercises_only(graded):
    out, rows, _ = graded
    got = points(rows, "wrong")
    assert {ex: got[ex] for ex in full(except_=("data", "model"))} == full(except_=("data", "model"))
    assert 0 < got["data"] < POINTS["data"] and 0 < got["model"] < POINTS["model"], got
    assert rows["wrong"]["status"] == "ok"
    assert any("31" in o for o in outputs_of(out, "wrong", "data")), "the feedback teaches attribute 31"


def test_each_broken_module_costs_its_exercise_only_and_a_conftest_changes_nothing(graded):
    out, rows, _ = graded
    got = points(rows, "mixed")
    assert got == {**{ex: 0.0 for ex in NAMES}, "plotting": float(POINTS["plotting"])}, got
    assert all(t["status"] == "failed" for t in results(out, "mixed").values()
               if t["max_score"] > 0 and "plotting" not in t["tags"])
    feedback = (out / "feedback" / "mixed.md").read_text()
    assert "exercises/sync.py: `train_epoch` is not written yet" in feedback
    assert "exercises/devices.py failed to import (line 1: raise SystemExit(3))" in feedback
    assert "exercises/data.py failed to import (line 1)" in feedback and "SyntaxError" in feedback
    assert "build_model() missing 1 required positional argument: 'channels'" in feedback
    assert "exercises/training.py does not exist" in feedback
    assert "missing: training.py" in rows["mixed"]["status"]
    assert "devices.py, data.py fail to import" in rows["mixed"]["status"]
    assert not rows["mixed"]["status"].startswith("flagged"), "a broken module is not an attack"


def test_an_empty_folder_scores_nothing_and_says_why(graded):
    out, rows, _ = graded
    assert float(rows["empty"]["total"]) == 0.0
    assert "no exercise module found" in rows["empty"]["status"]
    assert "exercises/model.py does not exist" in (out / "feedback" / "empty.md").read_text()


@pytest.mark.parametrize("name", ["stubs-answers", "stubs-forged"])
def test_stubs_that_take_the_answers_or_forge_verdicts_are_flagged_and_earn_nothing(graded, name):
    out, rows, summary = graded
    row, entry = rows[name], summary["submissions"][name]
    assert row["status"].startswith("flagged: exercises/") and entry["flagged"], row["status"]
    assert float(row["total"]) == 0.0, "--flagged zero (the default) gives a flagged submission 0"
    assert entry["earned"] == {ex: 0.0 for ex in NAMES}, "contained: a stub earns nothing, attack or not"
    feedback = (out / "feedback" / f"{name}.md").read_text()
    assert "Held for review by your teacher" in feedback and "line " in feedback
    log = (out / "logs" / f"{name}.log").read_text()
    assert log.count("\nflag: ") >= 6, "every module's construct is listed in the log"


def test_a_forged_line_on_the_results_channel_is_not_believed_and_flags(graded):
    out, _, summary = graded
    log = (out / "logs" / "stubs-forged.log").read_text()
    assert "(refused by the test process's tripwire)" in log
    assert "not signed by the test process's plugin (forged verdicts: not believed)" in log, log[:3000]


def test_outputs_follow_their_formats(graded):
    out, rows, summary = graded
    with open(out / "grades.csv", newline="") as f:
        assert next(csv.reader(f)) == ["submission", *NAMES, "total", "max", "percent", "status"]
    assert set(summary) >= {"max", "submissions", "protections", "flagged"}
    for name, entry in summary["submissions"].items():
        assert set(entry) >= {"exercises", "total", "status", "flagged", "earned"}
        assert set(entry["exercises"]) == set(NAMES)
        assert entry["total"] == pytest.approx(float(rows[name]["total"]), abs=0.01)
    for name in rows:
        data = json.loads((out / "results" / f"{name}.json").read_text())
        assert {"score", "execution_time", "output", "tests"} <= set(data)
        assert data["score"] == pytest.approx(float(rows[name]["total"]), abs=0.01)
        assert sum(t["max_score"] for t in data["tests"]) == pytest.approx(FULL, abs=0.01)
        for t in data["tests"]:
            assert {"name", "score", "max_score", "output", "visibility"} <= set(t)
            if t["max_score"] > 0:
                assert t["status"] in ("passed", "failed")
                assert (t["score"] == t["max_score"]) == (t["status"] == "passed")
    feedback = (out / "feedback" / "wrong.md").read_text()
    assert "Hint (`kata hint data`)" in feedback and "Smiling" in feedback
    assert "Hint (`kata hint devices`)" not in feedback, "no hint for an exercise that passes"
    reference = json.loads((out / "reference.json").read_text())
    assert reference["checks"] and not reference["flags"], "the vetting never flags the reference solutions"
    assert all(r["outcome"] == "passed" for r in reference["results"].values() if r["outcome"] != "skipped")


def test_kata_grade_states_the_protections_in_force(graded):
    out, _, summary = graded
    protections = summary["protections"]
    assert protections[0].startswith("verdicts: each submission's source vetted")
    assert any(line.startswith("user: ") for line in protections)
    assert any(line.startswith("sandbox: ") for line in protections)
    assert any(line.startswith("limits: ") and "2,500 MB" in line for line in protections)
    log = (out / "logs" / "good.log").read_text()
    assert all(f"protection: {line}" in log for line in protections)
    if os.geteuid() == 0 and Path("/usr/bin/bwrap").exists():
        assert "bubblewrap" in " ".join(protections) and "unprivileged user" in " ".join(protections)


# --- the helpers, on their own ------------------------------------------------------


def test_only_the_exercise_modules_are_taken_from_a_folder(tmp_path):
    src = write(tmp_path / "bob" / "exercises", sources("solutions", sync=None))
    (src / "conftest.py").write_text("raise SystemExit")
    (src / "helpers.py").write_text("X = 1")
    os.symlink("/etc/passwd", src / "sync.py")
    (src / "data.py").write_bytes(b"#" * (intake.MODULE_LIMIT + 1))
    dest = tmp_path / "copy"
    found, problems = intake.take_modules(tmp_path / "bob", dest)
    assert found == [n for n in NAMES if n not in ("data", "sync")]
    assert sorted(p.name for p in dest.iterdir()) == sorted(f"{n}.py" for n in found)
    assert any("sync.py is not a plain file" in p for p in problems)
    assert any("data.py is larger than 1 MB" in p for p in problems)


def test_modules_are_found_in_a_single_subfolder_and_in_zips(tmp_path):
    write(tmp_path / "carol" / "device-kata-main" / "exercises", sources("solutions", data=None))
    found, _ = intake.take_modules(tmp_path / "carol", tmp_path / "c1")
    assert "data" not in found and "model" in found

    archive = tmp_path / "dave.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("model.py", "X = 1\n")
        z.writestr("exercises/model.py", "X = 2\n")
        z.writestr("conftest.py", "raise SystemExit\n")
        link = zipfile.ZipInfo("data.py")
        link.external_attr = 0o120777 << 16
        z.writestr(link, "/etc/passwd")
    found, problems = intake.take_modules(archive, tmp_path / "d1")
    assert found == ["model"] and (tmp_path / "d1" / "model.py").read_text() == "X = 1\n"
    assert any("data.py is a link" in p for p in problems)
    assert not (tmp_path / "d1" / "conftest.py").exists()

    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    found, problems = intake.take_modules(tmp_path / "broken.zip", tmp_path / "b1")
    assert found == [] and "not a readable zip file" in problems[0]


def test_submissions_are_named_after_their_folder_or_zip_and_kept_apart(tmp_path):
    (tmp_path / "a" / "alice").mkdir(parents=True)
    (tmp_path / "b" / "alice").mkdir(parents=True)
    (tmp_path / "bob.zip").write_bytes(b"")
    subs = intake.name_submissions([tmp_path / "a" / "alice", tmp_path / "b" / "alice", tmp_path / "bob.zip"])
    assert [s.name for s in subs] == ["alice", "alice-2", "bob"]
    with pytest.raises(intake.GradeError, match="no such file"):
        intake.name_submissions([tmp_path / "nobody"])
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(intake.GradeError, match="a folder or a .zip"):
        intake.name_submissions([tmp_path / "notes.txt"])


def test_only_signed_lines_in_order_are_believed_on_the_results_channel(tmp_path):
    key = channel.new_key()
    path = tmp_path / "results.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    send = channel.sender(fd, key)
    send({"e": "start", "id": "tests/test_model.py::a"})
    os.write(fd, b'{"e": "result", "id": "tests/test_model.py::a", "outcome": "passed"}\n')   # no signature
    send({"e": "result", "id": "tests/test_model.py::a", "outcome": "failed", "message": "no"})
    os.close(fd)
    read, forged = events.read_events(path, key)
    assert [e["e"] for e in read] == ["start", "result"] and read[1]["outcome"] == "failed" and forged == 1
    other, forged = events.read_events(path, channel.new_key())
    assert other == [] and forged == 3, "a line signed with another key counts for nothing"
    lines = path.read_bytes().splitlines()
    replayed = tmp_path / "replayed.jsonl"
    replayed.write_bytes(b"\n".join([lines[0], lines[2], lines[2]]) + b"\n")
    assert events.read_events(replayed, key)[1] == 1, "a signed line out of its order counts for nothing"


def test_a_passed_result_counts_only_for_the_check_that_was_running():
    sequence = [
        {"e": "start", "id": "tests/test_model.py::a"},
        {"e": "result", "id": "tests/test_model.py::b", "outcome": "passed"},
        {"e": "result", "id": "tests/test_model.py::a", "outcome": "failed", "kind": "assert", "message": "no"},
        {"e": "start", "id": "tests/test_model.py::d"},
        {"e": "import", "module": "model"},
    ]
    accepted, running = events.accept(sequence)
    assert set(accepted) == {"tests/test_model.py::a"} and running == "tests/test_model.py::d"
    assert events.importing_at_end(sequence, NAMES) == "model"


def test_output_keeps_its_start_and_end_and_counts_the_rest():
    tail = events.OutputTail()
    for i in range(1000):
        tail.feed(f"line {i:04d} ".encode() * 100 + b"\n")
    text = tail.text()
    assert text.startswith("line 0000") and text.rstrip().endswith("line 0999")
    assert "bytes of output cut" in text and len(text) < 3 * events.OUTPUT_KEEP


def test_weights_come_from_the_reference_and_a_flagged_submission_scores_zero_unless_kept():
    checks = ["tests/test_sync.py::a", "tests/test_sync.py::b", "tests/test_sync.py::c",
              "tests/test_model.py::m", "tests/test_model.py::n"]
    reference = {"checks": checks, "results": {
        "tests/test_sync.py::a": {"outcome": "passed"},
        "tests/test_sync.py::b": {"outcome": "skipped", "message": "no CUDA device"},
        "tests/test_sync.py::c": {"outcome": "passed"},
        "tests/test_model.py::m": {"outcome": "passed"},
        "tests/test_model.py::n": {"outcome": "failed", "kind": "assert", "message": "broken here"},
    }}
    scheme = scoring.Scheme.from_reference(reference)
    assert scheme.weight["tests/test_sync.py::a"] == scheme.weight["tests/test_sync.py::c"] == POINTS["sync"] / 2
    assert scheme.weight["tests/test_sync.py::b"] == 0
    assert "no CUDA device" in scheme.unweighted["tests/test_sync.py::b"]
    assert scheme.weight["tests/test_model.py::m"] == POINTS["model"]
    assert any("test_model.py::n" in w for w in scheme.warnings)
    assert scheme.max["devices"] == 0 and any("'devices' has no checks" in w for w in scheme.warnings)

    student = Graded("s", Path("s"), results={
        "tests/test_sync.py::a": {"outcome": "passed"},
        "tests/test_sync.py::b": {"outcome": "passed"},
        "tests/test_sync.py::c": {"outcome": "skipped", "message": "skipped by the submission"},
        "tests/test_model.py::m": {"outcome": "passed"},
    }, found=list(NAMES))
    s = scoring.score(student, scheme)
    assert s.exercises["sync"] == POINTS["sync"] / 2, "a check skipped in a student's run earns nothing"
    assert s.exercises["model"] == POINTS["model"] and s.status == "ok"
    assert "carries no points here (skipped here (no CUDA device))" in reports.feedback_markdown(student, s, scheme)

    student.flags = ["exercises/model.py line 3: import os (why)"]
    zeroed, kept = scoring.score(student, scheme, "zero"), scoring.score(student, scheme, "keep")
    assert zeroed.total == 0 and zeroed.earned_total == kept.total == s.total
    assert status_of(student).startswith("flagged: exercises/model.py line 3: import os")
    assert "Held for review" in reports.feedback_markdown(student, zeroed, scheme)


def test_kata_grade_refuses_bad_arguments(tmp_path, capsys):
    assert kata("grade", tmp_path / "nobody", "--out", tmp_path / "out") == 1
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert kata("grade", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "out",
                "--gradescope-results", tmp_path / "r.json") == 2
    for bad in (["--jobs", "0"], ["--flagged", "maybe"], ["--timeout", "-1"]):
        with pytest.raises(SystemExit):
            kata("grade", tmp_path / "a", "--out", tmp_path / "out", *bad)


def test_the_grading_commands_stay_light():
    probe = ("import sys, argparse; import kata.commands.grade as g, kata.commands.gradescope as s, "
             "kata.commands.release as r; sub = argparse.ArgumentParser().add_subparsers(); "
             "[m.add_parser(sub) for m in (g, s, r)]; "
             "print(sorted(m for m in ('kata.grading.batch', 'torch', 'pytest', 'tqdm') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr
    assert _args.add_grading_options.__module__ == "kata.commands._args"


# --- the release and the Gradescope bundle ---------------------------------------------


def test_kata_release_writes_the_learners_copy_without_answers(tmp_path):
    out = tmp_path / "class-repo"
    assert kata("release", out) == 0
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {f"exercises/{n}.py" for n in NAMES} <= files and {f"tests/test_{n}.py" for n in NAMES} <= files
    assert {"README.md", "pyproject.toml", "kata/curriculum.toml", "kata/data/__init__.py", "kata/celeba.py"} <= files
    assert {f".kata/pristine/{n}.py" for n in NAMES} <= files, "the stubs as handed out, for `kata reset`"
    assert not any(f.startswith(("solutions/", "tests/selftest/")) or "__pycache__" in f for f in files)
    solutions = {(locate().solutions / f"{n}.py").read_text() for n in NAMES}
    assert not any((out / f).read_bytes().decode(errors="replace") in solutions for f in files)
    readme = (out / "README.md").read_text()
    assert "pytest exercises" in readme and "Handing in" in readme and "solutions/" not in readme


def test_a_release_into_a_non_empty_folder_or_the_kata_itself_is_refused(tmp_path):
    from kata.grading.release import release

    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(ValueError, match="not empty"):
        release(tmp_path / "busy")
    with pytest.raises(ValueError, match="inside the kata"):
        release(locate().root / "exercises" / "copy")


def test_kata_gradescope_writes_a_zip_with_the_scripts_at_its_root(tmp_path):
    assert kata("gradescope", tmp_path / "autograder.zip", "--timeout", "200", "--slow") == 0
    with zipfile.ZipFile(tmp_path / "autograder.zip") as z:
        names = set(z.namelist())
        run_autograder = z.read("run_autograder").decode()
        setup = z.read("setup.sh").decode()
        readme = z.read("README.txt").decode()
        assert (z.getinfo("run_autograder").external_attr >> 16) & 0o111, "run_autograder must be executable"
    assert {"setup.sh", "run_autograder", "device-kata/pyproject.toml", "device-kata/kata/grading/batch.py",
            "device-kata/kata/data/__init__.py",
            "device-kata/tests/conftest.py", "device-kata/solutions/model.py"} <= names
    assert all(f"device-kata/tests/test_{n}.py" in names for n in NAMES)
    assert not any("selftest" in n or "__pycache__" in n for n in names)
    assert '-e "$SRC"' in setup and "bubblewrap" in setup and 'chmod -R go-rwx "$SRC/solutions"' in setup
    assert "--timeout 200" in run_autograder and "--slow" in run_autograder and "--memory 1536" in run_autograder
    assert 'cd "$SRC" && KATA_HOME="$SRC"' in run_autograder, "the bundle grades with its own copy"
    assert "2,048 MB" in readme and "1,536 MB" in readme, "the ceiling fits the container the README names"


def test_vetting_never_flags_the_solutions_the_stubs_or_an_independent_implementation():
    project = locate()
    assert vetting.vet_folder(project.solutions, NAMES) == []
    assert vetting.vet_folder(project.exercises, NAMES) == []
    assert [f for name, source in INDEPENDENT.items()
            for f in vetting.vet_source(source, f"exercises/{name}.py", NAMES)] == []
