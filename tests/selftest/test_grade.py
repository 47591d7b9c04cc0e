"""`kata grade`: a class's submissions graded in bulk, safely.

One `kata grade` call (module fixture `graded`) grades a small class with
--jobs 2 and small limits: a copy of the solutions, a known-wrong submission
in a zip, one with a different breakage in each module (a syntax error,
SystemExit at import, a wrong signature, a missing module, a stub) that carries
a conftest.py, pytest.ini and sitecustomize.py which would mark everything
passed, one that exits, hangs and loops at import, a hostile one (memory
without bound, hundreds of megabytes of output, fake result files, a network
probe), and an empty folder. The tests read what it wrote. The helpers are tested on their own,
without running the checks; the Gradescope bundle's end-to-end run is slow.
"""

import csv
import json
import os
import re
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kata import cli, grade
from kata.target import CONTRACT, PROJECT_ROOT, curriculum

SOLUTIONS = PROJECT_ROOT / "solutions"
EXERCISES = PROJECT_ROOT / "exercises"
POINTS = {ex["name"]: ex["points"] for ex in curriculum()}
TEST_TIMEOUT = 8  # seconds per check: small (a hang costs it), well above what any check needs

pytestmark = pytest.mark.timeout(1200)


def solution(name: str, *replacements: tuple[str, str], before: str = "") -> str:
    """A solution module's source with text replaced (each must be found) and code put in front."""
    source = (SOLUTIONS / f"{name}.py").read_text()
    for old, new in replacements:
        assert old in source, f"solutions/{name}.py no longer contains {old!r}: update this test"
        source = source.replace(old, new)
    return before + source


def submission(folder: Path, **modules: str | None) -> Path:
    """A folder with every solution module, except those given (text), or left out (None)."""
    folder.mkdir(parents=True)
    for name in CONTRACT:
        source = modules.get(name, (SOLUTIONS / f"{name}.py").read_text())
        if source is not None:
            (folder / f"{name}.py").write_text(source)
    return folder


FAKE_FILES = """
import json, os
for _where in [".", "..", "../..", {canary!r}, {out!r}, os.path.join({out!r}, "results")]:
    try:
        os.makedirs(_where, exist_ok=True)
        with open(os.path.join(_where, "results.json"), "w") as _f:
            json.dump({{"score": 100, "tests": []}}, _f)
        with open(os.path.join(_where, "grades.csv"), "w") as _f:
            _f.write("submission,total\\nhostile,100\\n")
        with open(os.path.join(_where, "fake.json"), "w") as _f:
            _f.write("{{}}")
    except OSError:
        pass
"""

NETWORK_PROBE = """
import socket as _socket
try:
    _socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
except OSError:
    pass
else:
    raise SystemExit("the network is reachable from a submission")
"""


@pytest.fixture(scope="module")
def listener():
    """A port on this machine's loopback, for the network probe to reach (or not)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


@pytest.fixture(scope="module")
def graded(tmp_path_factory, listener):
    """Grade the class once; return (out folder, grades.csv rows by name, summary.json, canary folder)."""
    root = tmp_path_factory.mktemp("class")
    subs, out, canary = root / "submissions", root / "out", root / "canary"
    canary.mkdir()

    submission(subs / "good")
    (subs / "good" / "notes.txt").write_text("extra files are ignored")

    # Known-wrong code, zipped as a student would: wrong/exercises/*.py inside the zip.
    wrong = submission(root / "unzipped" / "wrong" / "exercises",
                       data=solution("data", ("SMILING = 31", "SMILING = 18")),
                       model=solution("model", ("    model.add_module('sigmoid', nn.Sigmoid())\n", "")))
    with zipfile.ZipFile(subs / "wrong.zip", "w") as archive:
        for name in CONTRACT:
            archive.write(wrong / f"{name}.py", f"wrong/exercises/{name}.py")
        archive.writestr("__MACOSX/wrong/._data.py", "junk")

    mixed = submission(subs / "mixed" / "exercises",
                       devices="raise SystemExit(3)\n",
                       data="def get_smile(attr:\n",
                       model=solution("model", ("def build_model()", "def build_model(channels)")),
                       training=None,
                       sync=(EXERCISES / "sync.py").read_text())
    # What would make every check pass if it were ever loaded:
    (mixed / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
    (mixed / "pytest.ini").write_text("[pytest]\naddopts = -p no:kata --co\n")
    (mixed / "sitecustomize.py").write_text("import os\nos.environ['PYTEST_ADDOPTS'] = '--co'\n")

    submission(subs / "crashy",
               devices=solution("devices", before="import os\nos._exit(0)\n"),
               model=solution("model", ("def build_model() -> nn.Sequential:\n",
                                        "def build_model() -> nn.Sequential:\n    while True:\n        pass\n")),
               training=solution("training", before="while True:\n    pass\n"))

    submission(subs / "hostile",
               data=solution("data", before="_blobs = []\nwhile True:\n    _blobs.append(b'x' * (64 << 20))\n"),
               plotting=solution("plotting", before="import sys\nfor _ in range(200):\n"
                                                    "    sys.stdout.write('spam ' * 200_000 + '\\n')\n"),
               sync=solution("sync", before=FAKE_FILES.format(canary=str(canary), out=str(out))),
               model=solution("model", before=NETWORK_PROBE.format(port=listener)))

    (subs / "empty").mkdir()

    paths = sorted(str(p) for p in subs.iterdir())
    code = cli.main(["grade", *paths, "--out", str(out), "--jobs", "2", "--test-timeout", str(TEST_TIMEOUT),
                     "--timeout", "200", "--memory", "2500", "--quiet"])
    assert code == 0
    with open(out / "grades.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    summary = json.loads((out / "summary.json").read_text())
    return out, rows, summary, canary


def points(rows, name) -> dict[str, float]:
    return {ex: float(rows[name][ex]) for ex in CONTRACT}


def full(except_=()) -> dict[str, float]:
    return {ex: float(POINTS[ex]) for ex in CONTRACT if ex not in except_}


def results(out: Path, name: str) -> dict[str, dict]:
    """The Gradescope tests of a submission, by check name."""
    data = json.loads((out / "results" / f"{name}.json").read_text())
    return {t["name"]: t for t in data["tests"]}


def outputs_of(out: Path, name: str, exercise: str) -> list[str]:
    return [t["output"] for t in results(out, name).values() if exercise in t["tags"] and t.get("status") == "failed"]


def sandboxed(summary) -> bool:
    return "read-only outside its own folder" in summary["sandbox"]


# --- the class run ---------------------------------------------------------------


def test_a_copy_of_the_solutions_scores_full(graded):
    out, rows, summary, _ = graded
    assert points(rows, "good") == full(), rows["good"]
    assert float(rows["good"]["total"]) == float(rows["good"]["max"]) == sum(POINTS.values())
    assert rows["good"]["percent"] == "100.0" and rows["good"]["status"] == "ok", rows["good"]
    assert summary["max"] == {ex: float(p) for ex, p in POINTS.items()}
    assert summary["submissions"]["good"]["total"] == sum(POINTS.values())
    assert not (out / "feedback" / "good.md").read_text().count("### "), "nothing to fix, nothing listed"


def test_known_wrong_code_in_a_zip_loses_points_in_its_exercises_only(graded):
    out, rows, _, _ = graded
    got = points(rows, "wrong")
    assert {ex: got[ex] for ex in full(except_=("data", "model"))} == full(except_=("data", "model"))
    assert 0 < got["data"] < POINTS["data"] and 0 < got["model"] < POINTS["model"], got
    assert rows["wrong"]["status"] == "ok"
    assert any("31" in o for o in outputs_of(out, "wrong", "data")), "the feedback teaches attribute 31"


def test_each_broken_module_costs_its_exercise_only_and_a_conftest_changes_nothing(graded):
    out, rows, _, _ = graded
    got = points(rows, "mixed")
    assert got == {**{ex: 0.0 for ex in CONTRACT}, "plotting": float(POINTS["plotting"])}, got
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


def test_an_exit_a_hang_and_an_endless_import_cost_only_their_exercises(graded):
    out, rows, _, _ = graded
    got = points(rows, "crashy")
    assert got == {"devices": 0.0, "data": POINTS["data"] * 1.0, "model": 0.0, "training": 0.0,
                   "plotting": POINTS["plotting"] * 1.0, "sync": POINTS["sync"] * 1.0}, got
    devices = outputs_of(out, "crashy", "devices")
    assert devices and all("exercises/devices.py ended the test process while it was being imported" in o
                           and "os._exit" in o for o in devices), devices[:2]
    model = outputs_of(out, "crashy", "model")
    assert sum(f"did not finish within {TEST_TIMEOUT} s" in o for o in model) == grade.MAX_STRIKES, model
    assert all("did not finish" in o or "not run" in o for o in model)
    assert any("exercises/model.py line" in o and "build_model" in o for o in model), "says where it hung"
    training = outputs_of(out, "crashy", "training")
    assert any("exercises/training.py did not finish importing" in o for o in training), training[:2]
    status = rows["crashy"]["status"]
    assert "ended early" in status and "timed out" in status, status


def test_memory_output_and_fake_files_change_nothing_else(graded):
    out, rows, summary, canary = graded
    got = points(rows, "hostile")
    assert got == {**full(except_=("data",)), "data": 0.0}, got
    data = outputs_of(out, "hostile", "data")
    assert data and "MemoryError" in data[0], data[:1]
    status = rows["hostile"]["status"]
    assert "data.py fails to import" in status and re.search(r"printed 1\d\d\.\d MB of output", status), status
    log = (out / "logs" / "hostile.log").read_text()
    assert len(log) < 1_000_000 and "bytes of output cut" in log
    # Its fake results.json / grades.csv never reach the grader's files.
    assert sorted(p.name for p in (out / "results").iterdir()) == sorted(f"{n}.json" for n in rows)
    assert set(rows) == {"good", "wrong", "mixed", "crashy", "hostile", "empty"}
    assert float(rows["hostile"]["sync"]) == POINTS["sync"]
    if sandboxed(summary):  # elsewhere they may lie around, but nothing reads them
        assert list(canary.iterdir()) == [], "outside its folder, a sandboxed submission writes nothing"
        assert not (out / "fake.json").exists() and not (out / "results.json").exists()


def test_the_sandbox_has_no_network_where_the_platform_allows(graded):
    out, rows, summary, _ = graded
    assert "network:" in summary["sandbox"] and "network:" in (out / "logs" / "good.log").read_text()
    if "network: none" not in summary["sandbox"]:
        pytest.skip(f"no network namespace here: {summary['sandbox']}")
    assert float(rows["hostile"]["model"]) == POINTS["model"], "the probe reached the network"


def test_an_empty_folder_scores_nothing_and_says_why(graded):
    out, rows, _, _ = graded
    assert float(rows["empty"]["total"]) == 0.0
    assert "no contract module found" in rows["empty"]["status"]
    assert "exercises/model.py does not exist" in (out / "feedback" / "empty.md").read_text()


def test_outputs_follow_their_formats(graded):
    out, rows, summary, _ = graded
    with open(out / "grades.csv", newline="") as f:
        assert next(csv.reader(f)) == ["submission", *CONTRACT, "total", "max", "percent", "status"]
    assert set(summary) >= {"max", "submissions"}
    for name, entry in summary["submissions"].items():
        assert set(entry) >= {"exercises", "total", "status"} and set(entry["exercises"]) == set(CONTRACT)
        assert entry["total"] == pytest.approx(float(rows[name]["total"]), abs=0.01)
    for name in rows:
        data = json.loads((out / "results" / f"{name}.json").read_text())
        assert {"score", "execution_time", "output", "tests"} <= set(data)
        assert data["score"] == pytest.approx(float(rows[name]["total"]), abs=0.01)
        assert sum(t["max_score"] for t in data["tests"]) == pytest.approx(sum(POINTS.values()), abs=0.01)
        for t in data["tests"]:
            assert {"name", "score", "max_score", "output", "visibility"} <= set(t)
            if t["max_score"] > 0:
                assert t["status"] in ("passed", "failed")
                assert (t["score"] == t["max_score"]) == (t["status"] == "passed")
    feedback = (out / "feedback" / "wrong.md").read_text()
    assert "Hint (`kata hint data`)" in feedback and "Smiling" in feedback
    assert "Hint (`kata hint devices`)" not in feedback, "no hint for an exercise that passes"
    reference = json.loads((out / "reference.json").read_text())
    assert reference["checks"] and all(r["outcome"] == "passed" for r in reference["results"].values()
                                       if r["outcome"] != "skipped")


# --- the helpers, on their own ------------------------------------------------------


def test_only_the_contract_modules_are_taken_from_a_folder(tmp_path):
    src = submission(tmp_path / "bob" / "exercises", sync=None)
    (src / "conftest.py").write_text("raise SystemExit")
    (src / "helpers.py").write_text("X = 1")
    os.symlink("/etc/passwd", src / "sync.py")
    (src / "data.py").write_bytes(b"#" * (grade.MODULE_LIMIT + 1))
    dest = tmp_path / "copy"
    found, problems = grade.take_modules(tmp_path / "bob", dest)
    assert found == ["devices", "model", "training", "plotting"]
    assert sorted(p.name for p in dest.iterdir()) == sorted(f"{n}.py" for n in found)
    assert any("sync.py is not a plain file" in p for p in problems)
    assert any("data.py is larger than 1 MB" in p for p in problems)


def test_modules_are_found_in_a_single_subfolder_and_in_zips(tmp_path):
    submission(tmp_path / "carol" / "device-kata-main" / "exercises", data=None)
    found, _ = grade.take_modules(tmp_path / "carol", tmp_path / "c1")
    assert "data" not in found and "model" in found

    archive = tmp_path / "dave.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("model.py", "X = 1\n")
        z.writestr("exercises/model.py", "X = 2\n")
        z.writestr("conftest.py", "raise SystemExit\n")
        link = zipfile.ZipInfo("data.py")
        link.external_attr = 0o120777 << 16
        z.writestr(link, "/etc/passwd")
    found, problems = grade.take_modules(archive, tmp_path / "d1")
    assert found == ["model"] and (tmp_path / "d1" / "model.py").read_text() == "X = 1\n"
    assert any("data.py is a link" in p for p in problems)
    assert not (tmp_path / "d1" / "conftest.py").exists()

    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    found, problems = grade.take_modules(tmp_path / "broken.zip", tmp_path / "b1")
    assert found == [] and "not a readable zip file" in problems[0]


def test_submissions_are_named_after_their_folder_or_zip_and_kept_apart(tmp_path):
    (tmp_path / "a" / "alice").mkdir(parents=True)
    (tmp_path / "b" / "alice").mkdir(parents=True)
    (tmp_path / "bob.zip").write_bytes(b"")
    subs = grade.name_submissions([tmp_path / "a" / "alice", tmp_path / "b" / "alice", tmp_path / "bob.zip"])
    assert [s.name for s in subs] == ["alice", "alice-2", "bob"]
    with pytest.raises(grade.GradeError, match="no such file"):
        grade.name_submissions([tmp_path / "nobody"])
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(grade.GradeError, match="a folder or a .zip"):
        grade.name_submissions([tmp_path / "notes.txt"])


def test_a_passed_result_counts_only_for_the_check_that_was_running():
    events = [
        {"e": "start", "id": "tests/test_model.py::a"},
        # written by the submission's code while check a ran: forged results for b and c
        {"e": "result", "id": "tests/test_model.py::b", "outcome": "passed"},
        {"e": "result", "id": "tests/test_model.py::c", "outcome": "passed"},
        {"e": "result", "id": "tests/test_model.py::a", "outcome": "failed", "kind": "assert", "message": "no"},
        {"e": "start", "id": "tests/test_model.py::d"},
        {"e": "import", "module": "model"},
    ]
    accepted, running = grade._accept(events)
    assert set(accepted) == {"tests/test_model.py::a"} and running == "tests/test_model.py::d"
    assert grade._importing_at_end(events) == "model"


def test_output_keeps_its_start_and_end_and_counts_the_rest():
    tail = grade.OutputTail()
    for i in range(1000):
        tail.feed(f"line {i:04d} ".encode() * 100 + b"\n")
    text = tail.text()
    assert text.startswith("line 0000") and text.rstrip().endswith("line 0999")
    assert "bytes of output cut" in text and len(text) < 3 * grade.OUTPUT_KEEP


def test_weights_come_from_the_reference_and_skipped_checks_carry_no_points():
    checks = ["tests/test_sync.py::a", "tests/test_sync.py::b", "tests/test_sync.py::c",
              "tests/test_model.py::m", "tests/test_model.py::n"]
    reference = {"checks": checks, "results": {
        "tests/test_sync.py::a": {"outcome": "passed"},
        "tests/test_sync.py::b": {"outcome": "skipped", "message": "no CUDA device"},
        "tests/test_sync.py::c": {"outcome": "passed"},
        "tests/test_model.py::m": {"outcome": "passed"},
        "tests/test_model.py::n": {"outcome": "failed", "kind": "assert", "message": "broken here"},
    }}
    scheme = grade.Scheme.from_reference(reference)
    assert scheme.weight["tests/test_sync.py::a"] == scheme.weight["tests/test_sync.py::c"] == POINTS["sync"] / 2
    assert scheme.weight["tests/test_sync.py::b"] == 0
    assert "no CUDA device" in scheme.unweighted["tests/test_sync.py::b"]
    assert scheme.weight["tests/test_model.py::m"] == POINTS["model"]
    assert any("test_model.py::n" in w for w in scheme.warnings)
    assert scheme.max["devices"] == 0 and any("'devices' has no checks" in w for w in scheme.warnings)

    student = grade.Graded("s", Path("s"), results={
        "tests/test_sync.py::a": {"outcome": "passed"},
        "tests/test_sync.py::b": {"outcome": "passed"},
        "tests/test_sync.py::c": {"outcome": "skipped", "message": "skipped by the submission"},
        "tests/test_model.py::m": {"outcome": "passed"},
    }, found=list(CONTRACT))
    s = grade.score(student, scheme)
    assert s.exercises["sync"] == POINTS["sync"] / 2, "a check skipped in a student's run earns nothing"
    assert s.exercises["model"] == POINTS["model"]
    feedback = grade.feedback_markdown(student, s, scheme)
    assert "carries no points here (skipped here (no CUDA device))" in feedback


def test_kata_grade_refuses_bad_arguments(tmp_path, capsys):
    assert cli.main(["grade", str(tmp_path / "nobody"), "--out", str(tmp_path / "out")]) == 1
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert cli.main(["grade", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out"),
                     "--gradescope-results", str(tmp_path / "r.json")]) == 2
    with pytest.raises(SystemExit):
        cli.main(["grade", str(tmp_path / "a"), "--out", str(tmp_path / "out"), "--jobs", "0"])


def test_the_kata_command_stays_light():
    probe = ("import sys, kata.cli; print(sorted(m for m in ('kata.grade', 'torch', 'pytest', 'tqdm') "
             "if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr


# --- the Gradescope autograder --------------------------------------------------------


def test_kata_gradescope_writes_a_zip_with_the_scripts_at_its_root(tmp_path, capsys):
    assert cli.main(["gradescope", str(tmp_path / "autograder.zip"), "--timeout", "200", "--slow"]) == 0
    with zipfile.ZipFile(tmp_path / "autograder.zip") as z:
        names = set(z.namelist())
        run_autograder = z.read("run_autograder").decode()
        setup = z.read("setup.sh").decode()
        assert (z.getinfo("run_autograder").external_attr >> 16) & 0o111, "run_autograder must be executable"
    assert {"setup.sh", "run_autograder", "device-kata/pyproject.toml", "device-kata/kata/grade.py",
            "device-kata/tests/conftest.py", "device-kata/solutions/model.py"} <= names
    assert all(f"device-kata/tests/test_{n}.py" in names for n in CONTRACT if (PROJECT_ROOT / "tests" /
                                                                              f"test_{n}.py").is_file())
    assert not any("selftest" in n or "__pycache__" in n for n in names)
    assert '/venv/bin/pip" install' in setup and '-e "$SRC"' in setup
    assert "--timeout 200" in run_autograder and "--slow" in run_autograder
    assert "/autograder/results/results.json" in run_autograder or "$ROOT/results/results.json" in run_autograder


@pytest.mark.slow
def test_run_autograder_grades_a_submission_into_results_json(tmp_path):
    """The generated run_autograder, with /autograder moved by KATA_AUTOGRADER_ROOT."""
    root = tmp_path / "autograder"
    assert cli.main(["gradescope", str(root / "source"), "--test-timeout", str(TEST_TIMEOUT)]) == 0
    submission(root / "submission", data=solution("data", ("SMILING = 31", "SMILING = 18")))
    (root / "submission" / "conftest.py").write_text("raise SystemExit('a submission conftest ran')\n")
    env = {**os.environ, "KATA_AUTOGRADER_ROOT": str(root), "KATA_PYTHON": sys.executable}
    env.pop("PYTEST_ADDOPTS", None)
    run = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                         text=True, timeout=900, cwd=root)
    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert sum(POINTS.values()) - POINTS["data"] < data["score"] < sum(POINTS.values())
    failed = [t for t in data["tests"] if t.get("status") == "failed"]
    assert failed and all(t["tags"] == ["data"] for t in failed)
    assert (root / "source" / "reference.json").is_file(), "the reference run is kept for the next submission"

    # A grader that can't run still leaves a results.json that says so.
    env["KATA_PYTHON"] = str(tmp_path / "no-such-python")
    (root / "results" / "results.json").unlink()
    run = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                         text=True, timeout=60, cwd=root)
    data = json.loads((root / "results" / "results.json").read_text())
    assert data["score"] == 0 and "autograder failed" in data["output"]


@pytest.mark.slow
def test_a_timed_out_submission_keeps_what_ran_and_says_what_did_not(tmp_path):
    """The wall-clock limit of a submission: the checks that ran count, the rest fail as "not run"."""
    # sync, the last exercise, sleeps 9 s per epoch: its checks can't finish within the 40 s.
    header = "def train_epoch(model, dl, loss_fn, optimizer, device):\n"
    slow = submission(tmp_path / "slow", sync=solution(
        "sync", (header, header + "    __import__('time').sleep(9)\n")))
    out = tmp_path / "out"
    scores = grade.grade([slow], out, grade.Limits(timeout=40, test_timeout=60), jobs=2,
                         progress=False, echo=lambda *_: None)
    status = scores[0].status
    assert re.match(r"timed out after 40 s: \d+ checks? did not run", status), status
    sync = [t for t in results(out, "slow").values() if t["tags"] == ["sync"] and t["max_score"] > 0]
    cut = [t for t in sync if "time limit (40 s) ran out" in t["output"]]
    assert cut and all(t["status"] == "failed" for t in cut), [t["output"] for t in sync]
    assert scores[0].exercises["sync"] < POINTS["sync"]
    assert {ex: scores[0].exercises[ex] for ex in CONTRACT if ex != "sync"} == full(except_=("sync",)), (
        "what ran before the limit counts")
