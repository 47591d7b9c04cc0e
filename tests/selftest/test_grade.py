"""`kata grade`: a class graded in bulk, each point a check passed on the hand-in's answers, in the grader.

One `kata grade` run (the session fixture `class_run`, tests/selftest/conftest.py, which grades the
attack battery's hand-ins beside these under --slow) grades a small class with --jobs 2: a copy
of the solutions, two independent correct implementations, honest code in unusual styles,
known-wrong code in a zip, a submission broken differently in each module (with a conftest.py,
pytest.ini and sitecustomize.py that would pass everything if they were run), an empty folder,
untouched stubs whose every verdict is forged, code that takes the checks' own helpers, a hand-in
whose exercises are a link to the reference solutions, one with a hard link to a reference file,
and two hand-ins with the same name. The tests read what it wrote. The helpers (intake, notes
for review, the report log and its hostile lines, what a hand-in leaves, scoring) are tested on
their own, without running anything. The attacks on the sandbox, the other sandboxes and the
Gradescope bundle are in test_grade_attacks.py (slow).
"""

import argparse
import csv
import itertools
import json
import os
import zipfile
from pathlib import Path

import pytest
from test_grade_samples import HONEST, INDEPENDENT, attack, no_map_location, sources, write, wrong_learning_rate

from kata import curriculum, records
from kata.commands import grade as grade_command
from kata.commands import gradescope as gradescope_command
from kata.commands import release as release_command
from kata.grading import hostile, intake, runner, vetting
from kata.grading.intake import Submission, take
from kata.grading.leftovers import Leftovers
from kata.grading.sandbox import Limits
from kata.grading.scoring import Scheme, score
from kata.grading.slots import Answer
from kata.harness.target import Target, TargetError
from kata.project import locate

NAMES = curriculum.names()
POINTS = {ex.name: ex.points for ex in curriculum.exercises()}
FULL = sum(POINTS.values())

pytestmark = pytest.mark.timeout(1500)


def kata(*argv) -> int:
    """`kata grade|gradescope|release ...`, through the commands' own parsers."""
    parser = argparse.ArgumentParser(prog="kata")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (grade_command, gradescope_command, release_command):
        module.add_parser(sub).set_defaults(run=module.run)
    args = parser.parse_args([str(a) for a in argv])
    return args.run(args)


def full(except_=()) -> dict[str, float]:
    return {ex: float(POINTS[ex]) for ex in NAMES if ex not in except_}


def points(rows, name) -> dict[str, float]:
    return {ex: float(rows[name][ex]) for ex in NAMES}


def read(out: Path) -> tuple[dict, dict]:
    with open(out / "grades.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    return rows, json.loads((out / "summary.json").read_text())


def class_hand_ins(root: Path) -> list[str]:
    """The class, written under ``root``: the hand-ins' paths, in the order they are graded."""
    subs = root / "submissions"
    project = locate()
    write(subs / "good", sources("solutions"))
    write(subs / "styled", dict(INDEPENDENT))
    write(subs / "honest", HONEST)
    wrong = write(root / "unzipped" / "wrong" / "exercises", sources(
        "solutions", data=sources()["data"].replace("SMILING = 31", "SMILING = 18"), training=wrong_learning_rate(),
        checkpoint=no_map_location()))
    with zipfile.ZipFile(subs / "wrong.zip", "w") as archive:
        for name in NAMES:
            archive.write(wrong / f"{name}.py", f"wrong/exercises/{name}.py")
        archive.writestr("__MACOSX/wrong/._data.py", "junk")
    mixed = write(subs / "mixed" / "exercises", sources(
        "solutions", devices="raise SystemExit(3)\n", data="def get_smile(attr:\n",
        model=sources()["model"].replace("def build_model()", "def build_model(channels)"), training=None,
        sync=sources("stubs")["sync"]))
    (mixed / "conftest.py").write_text("import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
                                       "def pytest_runtest_makereport(item, call):\n"
                                       "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
    (mixed / "pytest.ini").write_text("[pytest]\naddopts = -p no:kata --co\n")
    (mixed / "sitecustomize.py").write_text("import os\nos.environ['PYTEST_ADDOPTS'] = '--co'\n")
    (subs / "empty").mkdir()
    forgeries = itertools.cycle(["forge-report", "forge-log", "forge-gc-thread", "forge-match", "forge-builtin"])
    write(subs / "forged", {name: attack(kind, name) + source for (name, source), kind in
                            zip(sources("stubs").items(), forgeries)})   # every stub, however many
    write(subs / "helpers", {"model": attack("helpers", "model"), "devices": sources()["devices"]})
    linked = subs / "linked"
    linked.mkdir()
    (linked / "exercises").symlink_to(project.solutions)
    elsewhere = write(root / "elsewhere", {"model": sources()["model"]})   # a reference file, outside the hand-in
    os.link(elsewhere / "model.py", write(subs / "hardlink", {"devices": sources("stubs")["devices"]}) / "model.py")
    write(root / "again" / "good", {"devices": sources("stubs")["devices"]})
    return sorted(str(p) for p in subs.iterdir()) + [str(root / "again" / "good")]


@pytest.fixture(scope="module")
def graded(class_run):
    """The class, graded once (tests/selftest/conftest.py): (out folder, grades.csv rows by name, summary.json)."""
    out, rows, summary, _host = class_run
    return out, rows, summary


# --- the class run --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["good", "styled", "honest"])
def test_correct_code_scores_full_whatever_its_style(graded, name):
    out, rows, _ = graded
    assert points(rows, name) == full(), (name, rows[name])
    assert rows[name]["status"] == "ok", rows[name]["status"]


def test_known_wrong_code_in_a_zip_loses_points_in_its_exercises_only(graded):
    out, rows, _ = graded
    got, wrong = points(rows, "wrong"), ("data", "training", "checkpoint")
    assert all(got[ex] < POINTS[ex] for ex in wrong), got
    assert {ex: got[ex] for ex in NAMES if ex not in wrong} == full(wrong)
    # torch.load without map_location opens the file here (the simulated accelerator is this process's): only
    # the laptop, forked by the grading server without it, fails it, as a machine without a GPU does
    feedback = (out / "feedback" / "wrong.md").read_text()
    assert "Attempting to deserialize object on a CUDA device" in feedback, feedback[-3000:]
    assert "forged" not in rows["wrong"]["status"], rows["wrong"]["status"]


def test_each_broken_module_costs_its_exercise_only_and_a_conftest_changes_nothing(graded):
    _, rows, _ = graded
    got = points(rows, "mixed")
    assert got["plotting"] == POINTS["plotting"], got
    assert all(got[ex] == 0 for ex in ("devices", "data", "model", "training", "sync")), got
    status = rows["mixed"]["status"]
    assert "missing: training.py" in status and "forged" not in status, status
    assert "devices.py, data.py fail to import" in status, status   # a SystemExit, a syntax error


def test_an_empty_folder_scores_nothing_and_says_why(graded):
    _, rows, _ = graded
    assert float(rows["empty"]["total"]) == 0 and "no exercise module" in rows["empty"]["status"]


def test_forged_verdicts_on_untouched_stubs_earn_nothing(graded):
    """The checks read the records' answers without the hand-in's code: its forged verdicts never reach them."""
    out, rows, summary = graded
    assert float(rows["forged"]["total"]) == 0, rows["forged"]
    assert "not written yet" in (out / "feedback" / "forged.md").read_text()


def test_the_checks_helpers_taken_instead_of_written_earn_nothing(graded):
    _, rows, _ = graded
    assert points(rows, "helpers") == {**dict.fromkeys(NAMES, 0.0), "devices": POINTS["devices"]}, rows["helpers"]
    assert "review:" in rows["helpers"]["status"], rows["helpers"]["status"]


def test_links_to_the_reference_are_refused_and_named(graded):
    _, rows, _ = graded
    assert float(rows["linked"]["total"]) == 0 and "refused: exercises is a link to" in rows["linked"]["status"]
    assert float(rows["hardlink"]["total"]) == 0 and "refused: model.py is a hard link" in rows["hardlink"]["status"]


def test_two_hand_ins_with_one_name_keep_a_row_each(graded):
    out, rows, _ = graded
    assert points(rows, "good") == full() and float(rows["good-2"]["total"]) == 0, sorted(rows)
    assert (out / "feedback" / "good-2.md").is_file()


def test_outputs_follow_their_formats(graded):
    out, rows, summary = graded
    assert summary["max"] == {ex: float(p) for ex, p in POINTS.items()} and summary["total"] == FULL
    results = json.loads((out / "results" / "wrong.json").read_text())
    assert results["score"] == float(rows["wrong"]["total"])
    assert {t["status"] for t in results["tests"] if t["max_score"]} == {"passed", "failed"}
    feedback = (out / "feedback" / "forged.md").read_text()
    assert "_kata_target" not in feedback
    assert "@reproduce_failure" not in (out / "feedback" / "wrong.md").read_text()
    assert summary["points_resting_on_the_process"] > 0 and summary["resting_on_the_process"]


def test_kata_grade_states_the_protections_in_force(graded):
    _, _, summary = graded
    text = "\n".join(summary["protections"])
    assert "records" in text and "limits:" in text and "sandbox:" in text
    if summary["protections"][1].startswith("sandbox: bubblewrap"):
        assert "no reference solutions" in text


# --- intake, notes, report logs, scoring: no run ---------------------------------------------


def test_only_python_files_are_taken_and_links_out_of_the_hand_in_are_refused(tmp_path):
    sub = write(tmp_path / "alice", sources("solutions"))
    (sub / "conftest.py").write_text("x = 1\n")
    (sub / "notes.txt").write_text("ignored")
    (sub / "helper.py").symlink_to(locate().solutions / "training.py")
    (sub / "inside.py").symlink_to(sub / "data.py")
    taken = take(sub)
    assert taken.modules == list(NAMES) and "conftest.py" not in taken.files and "notes.txt" not in taken.files
    assert "inside.py" in taken.files and "helper.py" not in taken.files
    assert any("helper.py is a link to" in p for p in taken.problems), taken.problems


def test_zip_entries_that_leave_the_hand_in_are_refused(tmp_path):
    archive = tmp_path / "bob.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("bob/exercises/devices.py", "x = 1\n")
        z.writestr("../evil.py", "x = 2\n")
        z.writestr("/abs.py", "x = 3\n")
    taken = take(archive)
    assert taken.modules == ["devices"]
    assert sum("points outside the hand-in" in p for p in taken.problems) == 2, taken.problems


def test_submissions_get_a_name_each(tmp_path):
    paths = [write(tmp_path / d / "alice", {"devices": "x = 1\n"}) for d in ("a", "b")]
    paths.append(write(tmp_path / "alice-2", {"devices": "x = 1\n"}))
    names = [s.name for s in intake.name_submissions(paths)]
    assert len(set(names)) == 3, names
    with pytest.raises(intake.GradeError, match="no such file"):
        intake.name_submissions([tmp_path / "nobody"])


def test_notes_for_review_never_touch_ordinary_code():
    assert vetting.review(HONEST) == [], vetting.review(HONEST)
    assert vetting.review(sources("solutions")) == [] and vetting.review(dict(INDEPENDENT)) == []
    notes = vetting.review({"model.py": attack("helpers", "model"), "data.py": "import ctypes\n",
                            "sync.py": "def f(:\n"})
    assert len(notes) == 3 and any("kata.checks" in n for n in notes) and any("can't read" in n for n in notes)


def test_a_report_log_is_read_and_only_finished_checks_count():
    lines = [{"$report_type": "TestReport", "nodeid": "tests/test_model.py::test_a", "when": w, "outcome": "passed",
              "user_properties": [["kata_exercise", "model"], ["kata_record", ["model.built", ["work"]]]]}
             for w in ("setup", "call", "teardown")]
    lines.append({"$report_type": "TestReport", "nodeid": "tests/test_model.py::test_b", "when": "setup",
                  "outcome": "passed", "user_properties": [["kata_exercise", "model"]]})
    text = "\n".join(json.dumps(x) for x in lines) + "\nnot json\n[1, 2]\n"
    found = runner.outcomes(text)
    assert list(found) == ["tests/test_model.py::test_a"]
    assert found["tests/test_model.py::test_a"]["records"] == {"model.built": ["work"]}


# --- every byte from a sandbox is hostile: no run ---------------------------------------------


def test_a_hostile_line_is_refused_before_it_is_decoded():
    for line in ("[" * 100_000, '{"a":' * 100_000, "[" * (hostile.DEPTH_LIMIT + 1), "1" * (hostile.LINE_LIMIT + 1),
                 "not json", "[1, 2", '{"a": NaN'):
        with pytest.raises(hostile.Unreadable):
            hostile.decode(line)
    assert hostile.decode('["[[[[", {"b": "]]"}, [[1]]]') == ["[[[[", {"b": "]]"}, [[1]]]   # brackets in strings
    assert hostile.decode("[" * hostile.DEPTH_LIMIT + "]" * hostile.DEPTH_LIMIT)


def test_a_report_that_is_a_fifo_a_link_or_missing_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "fifo")   # opened for reading without a writer: it would wait forever
    (tmp_path / "report").write_text("line\n")
    (tmp_path / "link").symlink_to(tmp_path / "report")
    for name in ("fifo", "link", "missing"):
        with pytest.raises(hostile.Unreadable):
            hostile.open_regular(tmp_path / name)
    with hostile.open_regular(tmp_path / "report") as f:
        assert f.read() == b"line\n"


def test_a_report_log_keeps_its_good_lines_and_fails_a_check_reported_twice():
    def report(nodeid, when):
        return json.dumps({"$report_type": "TestReport", "nodeid": nodeid, "when": when, "outcome": "passed",
                           "user_properties": [["kata_exercise", "model"], ["kata_outcome", "passed"]]})

    a, b = "tests/test_model.py::test_a", "tests/test_model.py::test_b"
    lines = [report(a, w) for w in ("setup", "call", "teardown")] + [report(b, w) for w in ("setup", "call", "call")]
    lines += ["[" * 100_000, "x" * (hostile.LINE_LIMIT + 1), "not json", report(b, "teardown")]
    found = runner.outcomes("\n".join(lines))
    assert found[a]["outcome"] == "passed"
    assert found[b]["outcome"] == "failed" and "call 2 times" in found[b]["message"], found[b]


class FakeSlot:
    """A server that gives the answers it is made with, in turn (an exception: raised)."""

    def __init__(self, *answers):
        self.answers, self.asked, self.stopped = list(answers), [], 0

    def ask(self, request: dict, timeout: float) -> Answer:
        self.asked.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def stop(self) -> None:
        self.stopped += 1


def graded_by(tmp_path, records: FakeSlot, verdicts: FakeSlot, **options) -> runner.Graded:
    job = runner.Job(records, verdicts, Limits(), pytest_args=[])
    return runner.grade_submission(job, Submission("x", write(tmp_path / "x", {"devices": "x = 1\n"})), **options)


def test_a_record_written_twice_is_void_and_the_records_come_from_the_hand_ins_seed(tmp_path):
    lines = [json.dumps([ex, name, {"data": 1}]) for ex in NAMES for name in runner._asked(ex)]
    twice = json.loads(lines[3])[:2]
    lines += [lines[3], "[" * 100_000, "not json"]
    records = FakeSlot(Answer("exit", report="\n".join(lines)))
    finished = json.dumps({"$report_type": "SessionFinish"})
    graded = graded_by(tmp_path, records, FakeSlot(Answer("exit", report=finished)), seed=11)
    assert "written twice" in graded.records[twice[0]][twice[1]]["error"]
    assert sum(r == {"data": 1} for names in graded.records.values() for r in names.values()) == len(lines) - 4
    assert graded.seed == 11 and records.asked[0]["seed"] == 11
    other = graded_by(tmp_path, FakeSlot(Answer("exit", report="\n".join(lines))),
                      FakeSlot(Answer("exit", report=finished)))
    assert other.seed not in (None, 11), "a seed of its own, by default"


def test_the_records_server_never_imports_pytest_or_the_checks(tmp_path):
    """The one sandbox role: a hand-in's modules are imported where neither pytest nor the checks' helpers are (a
    module that finds them there raises, and every record of its exercise says so)."""
    from kata.grading.sandbox import Plan, Roots
    from kata.grading.slots import Slot

    records.small_celeba(tmp_path / "data" / records.DATA)
    code = sources()["devices"] + (
        "\nimport sys\nfound = sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'pluggy')"
        " or m.startswith('kata.checks'))\nassert not found, found\n")
    slot = Slot(Plan(), "records", Roots(locate(), tmp_path / "data"), Limits(), 0, tmp_path)
    slot.start()
    try:
        answer = slot.ask({"files": {"devices.py": code}, "seed": 5, "skip": [], "wall": 120, "quiet": 60,
                           "start": 60}, 180)
    finally:
        slot.stop()
    found = [json.loads(line) for line in answer.report.splitlines()]
    devices = {name: result for exercise, name, result in found if exercise == "devices"}
    assert set(devices) == set(runner._asked("devices")), answer.output[-2000:]
    assert not [r["error"] for r in devices.values() if "error" in r], devices


def test_whatever_fails_in_the_grader_on_one_hand_in_is_that_hand_ins_row(tmp_path):
    records, verdicts = FakeSlot(RecursionError("too deep")), FakeSlot()
    graded = graded_by(tmp_path, records, verdicts)
    assert any("could not read its report: RecursionError: too deep" in p for p in graded.problems), graded.problems
    assert records.stopped and verdicts.stopped, "the next hand-in gets fresh servers"


def test_a_grading_child_loads_only_the_modules_handed_in(tmp_path, monkeypatch):
    folder = write(tmp_path / "sub", {"devices": sources()["devices"], "sync": sources()["sync"]})
    monkeypatch.setattr(Target, "handed_in", None)   # put back after the test
    Target.only(["devices.py"])
    target = Target(folder)
    assert target.load("devices").to_python(1) == 1
    with pytest.raises(TargetError, match="does not exist"):
        target.load("sync")


def test_what_a_hand_in_leaves_in_its_folder_is_removed_read_only_or_not(tmp_path):
    (tmp_path / "kept").mkdir()
    leftovers = Leftovers("none", tmp_path)   # no sandbox: the folder only
    made = tmp_path / "abc" / "exercises" / "deep"
    made.mkdir(parents=True)
    (made / "module.py").write_text("x = 1\n")
    for folder in (made, made.parent, made.parent.parent, tmp_path / "kept", tmp_path):
        os.chmod(folder, 0o500)
    assert leftovers.clear() == [] and [p.name for p in tmp_path.iterdir()] == ["kept"]
    (tmp_path / "kept").rmdir()
    (tmp_path / "kept").symlink_to(tmp_path)
    assert leftovers.clear() == [str(tmp_path / "kept")], "what can't be put back is said"


def test_a_check_earns_its_weight_when_it_passed_and_the_points_resting_on_the_process_are_listed():
    """A check's weight is its exercise's points shared among the checks the reference passes; a hand-in earns it
    where the check passed on its answers; the points resting on the process are the checks that read a record
    whose answers rest, at least in part, on the process (kata.records.PROCESS)."""
    read = {"a": {"model.built": ["constant", "behaviour"]}, "b": {"model.initial": ["work"]},
            "c": {"model.initial": ["work"]}, "d": {}}
    results = {f"tests/test_model.py::test_{n}": {"outcome": "passed", "records": r} for n, r in read.items()}
    results["tests/test_model.py::test_d"]["outcome"] = "skipped"
    scheme = Scheme.from_reference(results)
    checks = list(results)
    assert [scheme.weight[c] for c in checks] == [POINTS["model"] / 3] * 3 + [0.0]
    assert not [w for w in scheme.warnings if "'model'" in w or "test_model" in w], scheme.warnings
    graded = runner.Graded("x", Path("x"), found=list(NAMES), results={c: {"outcome": "passed"} for c in checks[:2]})
    s = score(graded, scheme)
    assert s.exercises["model"] == 2 * POINTS["model"] / 3 and s.passed["model"] == 2 and s.counted["model"] == 3
    assert scheme.on_the_process(checks[0]) == ["model.built"] and scheme.on_the_process(checks[1]) == []
    assert scheme.resting_on_the_process() == POINTS["model"] / 3
    assert records.PROCESS == ("constant", "shape", "property", "behaviour")


def test_kata_grade_refuses_bad_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit):
        kata("grade", "--out", tmp_path, "--jobs", "0")
    assert kata("grade", tmp_path / "missing", "--out", tmp_path / "o") == 1
    assert "no such file or folder" in capsys.readouterr().err


def test_kata_release_writes_the_learners_copy_without_answers(tmp_path):
    assert kata("release", tmp_path / "class") == 0
    files = {p.relative_to(tmp_path / "class").as_posix() for p in (tmp_path / "class").rglob("*") if p.is_file()}
    assert not any(f.startswith(("solutions/", "tests/selftest/")) for f in files)
    assert "exercises/devices.py" in files and "README.md" in files


def test_kata_gradescope_writes_a_zip_with_the_scripts_at_its_root(tmp_path):
    assert kata("gradescope", tmp_path / "autograder.zip") == 0
    with zipfile.ZipFile(tmp_path / "autograder.zip") as z:
        names = set(z.namelist())
    assert {"setup.sh", "run_autograder"} <= names and "device-kata/solutions/training.py" in names
    assert not any("selftest" in n for n in names)
