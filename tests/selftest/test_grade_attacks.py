"""The grader against students who want the marks without the work (slow: `pytest --slow`).

Each attack of issue 13, and variations (tests/selftest/test_grade_samples.py),
is a hostile submission here. Each is flagged, and contained: on untouched
stubs it earns nothing; on working code it earns no more than the same code
without it (and, for what the sandbox must stop, exactly as much: the attack
raises, so a point lost would show a leak). Then the same for the fallback
sandboxes (hand-written namespaces; none at all), the Gradescope bundle end to
end, and a submission cut short by its time limit.
"""

import csv
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_grade import kata
from test_grade_samples import (
    ANSWER_ATTACKS,
    INDEPENDENT,
    SANDBOX_ATTACKS,
    VERDICT_ATTACKS,
    attack,
    sources,
    with_attack,
    write,
    wrong_learning_rate,
)

from kata import curriculum
from kata.checks.mutants import mutated
from kata.grading import procs

NAMES = curriculum.names()
POINTS = {ex.name: ex.points for ex in curriculum.exercises()}
FULL = sum(POINTS.values())
TEST_TIMEOUT = 10
MEMORY_MB = 1536
# What a sandbox attack raises when it gets through (test_grade_samples.py), and those that cost no time.
SUCCESS = ("read what it must not", "reached the host's sockets", "started 200 processes", "two processes held")
CHEAP = ("detached-writer", "hold-stdout", "read-secrets", "shared-memory", "host-socket")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
FULL_SANDBOX = os.name == "posix" and os.geteuid() == 0 and bool(shutil.which("bwrap"))
needs_full_sandbox = pytest.mark.skipif(not FULL_SANDBOX, reason="the full sandbox needs root and bubblewrap "
                                        "(apt-get install bubblewrap); CI has both")


class Host:
    """What a submission must not reach on this machine: Unix sockets (a file, an abstract one) and a TCP
    port on the loopback, listening."""

    def __init__(self, root: Path):
        self.marker = "kata-attack-" + secrets.token_hex(4)
        self.sock = str(root / f"{self.marker}.sock")
        self.servers = []
        for family, address in ((socket.AF_UNIX, self.sock), (socket.AF_UNIX, "\0" + self.marker),
                                (socket.AF_INET, ("127.0.0.1", 0))):
            server = socket.socket(family)
            server.bind(address)
            server.listen(8)
            server.setblocking(False)
            self.servers.append(server)
        self.port = self.servers[-1].getsockname()[1]

    def reached(self) -> bool:
        for server in self.servers:
            try:
                server.accept()
                return True
            except BlockingIOError:
                continue
        return False

    def values(self, out: Path) -> dict:
        return {"marker": self.marker, "out": str(out), "sock": self.sock, "port": self.port,
                "chunk": int(MEMORY_MB * 0.65) << 20}

    def close(self) -> None:
        for server in self.servers:
            server.close()


def left_behind() -> list[str]:
    """Processes a grading run left: any of its users', its zygote, its test processes."""
    found = [f"uid {uid}: {pid}" for uid in range(61000, 61016) for pid in procs.with_uid(uid)]
    for pid in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"kata-grade-zygote" in cmdline and int(pid) != os.getpid():
            found.append(f"zygote {pid}")
    return found


def run(root: Path, modules: dict[str, dict], *options: str) -> tuple[Path, dict, dict]:
    out = root / "out"
    paths = [str(write(root / "subs" / name, sources_)) for name, sources_ in modules.items()]
    start = time.monotonic()
    assert kata("grade", *paths, "--out", out, "--jobs", "2", "--test-timeout", TEST_TIMEOUT, "--timeout", "240",
                "--memory", MEMORY_MB, "--quiet", *options) == 0
    seconds = time.monotonic() - start
    with open(out / "grades.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    summary = json.loads((out / "summary.json").read_text())
    summary["seconds_measured"] = seconds
    return out, rows, summary


def earned(summary: dict, name: str) -> float:
    return sum(summary["submissions"][name]["earned"].values())


def wrong_modules() -> dict[str, str]:
    """Known-wrong code: attribute 18 for Smiling, no sigmoid at the end of the CNN."""
    return sources("solutions", data=mutated("data", ("SMILING = 31", "SMILING = 18")),
                   model=mutated("model", ("    model.add_module('sigmoid', nn.Sigmoid())\n", "")))


def battery(host: Host, out: Path) -> dict[str, dict]:
    values = host.values(out)
    subs = {"independent": dict(INDEPENDENT), "wrong": wrong_modules(),
            "wrong-lr": sources(training=wrong_learning_rate())}
    for kind in ANSWER_ATTACKS + VERDICT_ATTACKS:
        subs[f"{kind}-stubs"] = with_attack(kind, "stubs", **values)
    for kind in SANDBOX_ATTACKS:
        subs[f"{kind}-stubs"] = with_attack(kind, "stubs", where=("devices",), **values)
        subs[f"{kind}-solutions"] = with_attack(kind, "solutions", where=("devices",), **values)
    for kind in ("forge-os-write", "forge-report", "references-module", "references-laundered"):
        subs[f"{kind}-wrong"] = {name: attack(kind, name, **values) + "\n" + source
                                 for name, source in wrong_modules().items()}
    subs["references-defaults"] = sources(training=attack("references-defaults", "training") + wrong_learning_rate())
    subs["leak-in-message"] = with_attack("leak-in-message", "solutions", where=("model",), **values)
    return subs


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    if not FULL_SANDBOX:
        pytest.skip("the full sandbox needs root and bubblewrap (apt-get install bubblewrap); CI has both")
    root = tmp_path_factory.mktemp("attacks")
    host = Host(root)
    try:
        out, rows, summary = run(root, battery(host, root / "out"))
        time.sleep(6)   # long enough for a detached process to do what it waited to do
        return out, rows, summary, host, (out / "grades.csv").read_text(), left_behind(), host.reached()
    finally:
        host.close()


def test_an_independent_implementation_still_scores_full(attacked):
    _, rows, summary, *_ = attacked
    assert float(rows["independent"]["total"]) == FULL and rows["independent"]["status"] == "ok"


@pytest.mark.parametrize("kind", ANSWER_ATTACKS + VERDICT_ATTACKS + SANDBOX_ATTACKS)
def test_untouched_stubs_with_an_attack_are_flagged_and_score_zero(attacked, kind):
    _, rows, summary, *_ = attacked
    row = rows[f"{kind}-stubs"]
    assert row["status"].startswith("flagged: exercises/"), row["status"]
    assert float(row["total"]) == 0.0 and earned(summary, f"{kind}-stubs") == 0.0


@pytest.mark.parametrize("kind", SANDBOX_ATTACKS)
def test_what_the_sandbox_must_stop_is_flagged_and_contained(attacked, kind):
    out, rows, summary, host, grades_later, leftovers, reached = attacked
    name = f"{kind}-solutions"
    assert rows[name]["status"].startswith("flagged: "), rows[name]["status"]
    feedback = (out / "feedback" / f"{name}.md").read_text()
    assert not any(success in feedback for success in SUCCESS), f"the attack got through:\n{feedback[:3000]}"
    if kind in CHEAP:   # (starting processes or filling memory costs time: a check may run out of it)
        assert summary["submissions"][name]["earned"] == {n: float(POINTS[n]) for n in NAMES}, feedback[:3000]
    log = (out / "logs" / f"{name}.log").read_text()
    seconds = float(log.split("--- test process 1 (")[1].split(" s")[0])
    assert seconds < 120, f"a process holding the output kept the grader {seconds} s"
    assert "hacked" not in grades_later, "a detached process rewrote the grades after the grader wrote them"
    assert not leftovers, f"processes left behind: {leftovers}"
    assert not reached, "a submission reached a Unix socket of the host"
    assert not any(Path(p).exists() for p in (f"/dev/shm/{host.marker}", f"/tmp/{host.marker}",
                                             f"/tmp/{host.marker}-alive"))


@pytest.mark.parametrize("kind", ["forge-os-write", "forge-report", "references-module", "references-laundered"])
def test_verdicts_forged_on_top_of_wrong_code_gain_nothing(attacked, kind):
    _, rows, summary, *_ = attacked
    assert rows[f"{kind}-wrong"]["status"].startswith("flagged: ")
    assert earned(summary, f"{kind}-wrong") <= earned(summary, "wrong") < FULL


def test_a_patched_reference_gains_nothing_over_the_same_mistake(attacked):
    _, rows, summary, *_ = attacked
    assert rows["references-defaults"]["status"].startswith("flagged: exercises/training.py line ")
    assert not rows["wrong-lr"]["status"].startswith("flagged")
    entries = summary["submissions"]
    honest, patched = entries["wrong-lr"]["earned"], entries["references-defaults"]["earned"]
    assert honest["training"] < POINTS["training"], "the wrong learning rate loses training points"
    assert patched["training"] <= honest["training"]


def test_student_feedback_carries_only_what_the_sandbox_could_see(attacked):
    out, rows, summary, host, *_ = attacked
    seen = ((out / "feedback" / "leak-in-message.md").read_text()
            + (out / "results" / "leak-in-message.json").read_text())
    assert "exercises/model.py failed to import" in seen
    assert f"{host.marker} {socket.gethostname()} " not in seen, "the host's name reached the feedback"
    assert f"{host.marker} kata-sandbox " in seen or f"{host.marker} [Errno" in seen
    assert "data.py devices.py" not in seen, "the reference solutions' folder was listed"


# --- the fallback sandboxes ----------------------------------------------------------------


def fallback_battery(host: Host, out: Path, kinds) -> dict[str, dict]:
    values = host.values(out)
    subs = {f"{kind}-solutions": with_attack(kind, "solutions", where=("devices",), **values) for kind in kinds}
    subs["answers-absolute-stubs"] = with_attack("answers-absolute", "stubs", **values)
    return subs


@needs_full_sandbox
@pytest.mark.parametrize("tier", ["namespaces", "none"])
def test_the_fallback_sandboxes_still_end_every_process_and_hold_the_limits(tmp_path, monkeypatch, tier):
    import kata.grading.sandbox as sandbox

    host = Host(tmp_path)
    if tier == "namespaces":
        monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)   # as where bubblewrap is missing
        kinds = ("detached-writer", "hold-stdout", "shared-memory", "host-socket", "many-processes",
                 "memory-together")
    else:
        kinds = ("detached-writer", "hold-stdout", "many-processes", "memory-together")
    try:
        out, rows, summary = run(tmp_path, fallback_battery(host, tmp_path / "out", kinds),
                                 *(["--no-sandbox"] if tier == "none" else []))
        time.sleep(6)
        assert "hacked" not in (out / "grades.csv").read_text()
        assert not left_behind() and not host.reached()
    finally:
        host.close()
    expected = "hand-written namespaces" if tier == "namespaces" else "none"
    assert any(line.startswith("sandbox: " + expected) for line in summary["protections"]), summary["protections"]
    for name, row in rows.items():
        assert row["status"].startswith("flagged: "), (name, row["status"])
        feedback = (out / "feedback" / f"{name}.md").read_text()
        assert not any(success in feedback for success in SUCCESS), (name, feedback[:3000])
        if name.removesuffix("-solutions") in CHEAP:
            assert summary["submissions"][name]["earned"] == {n: float(POINTS[n]) for n in NAMES}, name
    assert earned(summary, "answers-absolute-stubs") == 0.0
    assert not Path(f"/dev/shm/{host.marker}").exists() or tier == "none"


# --- old hostile submissions: crashes, hangs, memory, output ----------------------------------


@needs_full_sandbox
def test_an_exit_a_hang_an_endless_import_memory_and_output_cost_only_their_exercises(tmp_path):
    crashy = sources(devices="import os\nos._exit(0)\n" + sources()["devices"],
                     model=mutated("model", ("def build_model() -> nn.Sequential:\n",
                                             "def build_model() -> nn.Sequential:\n    while True:\n        pass\n")),
                     training="while True:\n    pass\n" + sources()["training"])
    hostile = sources(data="_blobs = []\nwhile True:\n    _blobs.append(b'x' * (64 << 20))\n" + sources()["data"],
                      plotting="for _ in range(200):\n    print('spam ' * 200_000)\n" + sources()["plotting"])
    out, rows, summary = run(tmp_path, {"crashy": crashy, "hostile": hostile})
    assert rows["crashy"]["status"].startswith("flagged: exercises/devices.py line 1: import os")
    got = summary["submissions"]["crashy"]["earned"]
    assert got == {**{n: float(POINTS[n]) for n in NAMES}, "devices": 0.0, "model": 0.0, "training": 0.0}, got
    feedback = (out / "feedback" / "crashy.md").read_text()
    assert "exercises/devices.py ended the test process while it was being imported" in feedback
    assert f"did not finish within {TEST_TIMEOUT} s" in feedback
    assert "exercises/training.py did not finish importing" in feedback
    assert "ended early" in rows["crashy"]["status"] and "timed out" in rows["crashy"]["status"]

    assert not rows["hostile"]["status"].startswith("flagged"), "a runaway loop and a chatty module are not attacks"
    assert summary["submissions"]["hostile"]["exercises"] == {**{n: float(POINTS[n]) for n in NAMES}, "data": 0.0}
    assert "MemoryError" in (out / "feedback" / "hostile.md").read_text()
    assert "printed" in rows["hostile"]["status"]
    assert "bytes of output cut" in (out / "logs" / "hostile.log").read_text()


def test_a_timed_out_submission_keeps_what_ran_and_says_what_did_not(tmp_path):
    """The wall-clock limit of a submission: the checks that ran count, the rest fail as "not run"."""
    header = "def train_epoch(model, dl, loss_fn, optimizer, device):\n"
    slow = sources(sync=mutated("sync", (header, header + "    __import__('time').sleep(9)\n")))
    out = tmp_path / "out"
    write(tmp_path / "slow", slow)
    assert kata("grade", tmp_path / "slow", "--out", out, "--timeout", "40", "--test-timeout", "60", "--jobs", "2",
                "--quiet", "--flagged", "keep") == 0
    with open(out / "grades.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert "timed out after 40 s:" in row["status"] and "did not run" in row["status"], row["status"]
    assert float(row["sync"]) < POINTS["sync"]
    assert {n: float(row[n]) for n in NAMES if n != "sync"} == {n: float(POINTS[n]) for n in NAMES if n != "sync"}


# --- Gradescope ---------------------------------------------------------------------------------


def test_run_autograder_grades_with_the_bundles_own_copy_into_results_json(tmp_path):
    """The generated run_autograder, with /autograder moved by KATA_AUTOGRADER_ROOT."""
    root = tmp_path / "autograder"
    assert kata("gradescope", root / "source", "--test-timeout", str(TEST_TIMEOUT)) == 0
    write(root / "submission", sources(data=mutated("data", ("SMILING = 31", "SMILING = 18"))))
    (root / "submission" / "conftest.py").write_text("raise SystemExit('a submission conftest ran')\n")
    env = {**os.environ, "KATA_AUTOGRADER_ROOT": str(root), "KATA_PYTHON": sys.executable}
    env.pop("PYTEST_ADDOPTS", None)
    run_ = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=900, cwd=root)
    assert run_.returncode == 0, run_.stdout + run_.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert FULL - POINTS["data"] < data["score"] < FULL, data["output"][:2000]
    failed = [t for t in data["tests"] if t.get("status") == "failed"]
    assert failed and all(t["tags"] == ["data"] for t in failed)
    assert (root / "source" / "reference.json").is_file(), "the reference run is kept for the next submission"
    summary = json.loads((root / "grading" / "summary.json").read_text())
    bundle = root / "source" / "device-kata"
    assert summary["kata"] == str(bundle / "kata") and summary["project"] == str(bundle), "the bundle's own copy"
    assert not left_behind(), "every process ended before results.json was written"
    assert any("user: its own unprivileged user" in line for line in summary["protections"]) or os.geteuid() != 0

    # A grader that can't run still leaves a results.json that says so.
    env["KATA_PYTHON"] = str(tmp_path / "no-such-python")
    (root / "results" / "results.json").unlink()
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                   timeout=60, cwd=root)
    data = json.loads((root / "results" / "results.json").read_text())
    assert data["score"] == 0 and "autograder failed" in data["output"]


# --- the learners' copy --------------------------------------------------------------------------


def test_the_release_runs_its_own_checks_without_the_solutions(tmp_path):
    """In the learners' copy, `pytest` (its self-check: every check fails on the untouched stubs) passes."""
    out = tmp_path / "release"
    assert kata("release", out) == 0
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "KATA_HOME")}
    run_ = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"], cwd=out, env=env,
                          capture_output=True, text=True, timeout=600)
    assert run_.returncode == 0, run_.stdout[-3000:] + run_.stderr[-2000:]
    assert "xfailed" in run_.stdout and " failed" not in run_.stdout
    assert str(out) in subprocess.run([sys.executable, "-c", "import kata; print(kata.__file__)"], cwd=out, env=env,
                                      capture_output=True, text=True).stdout, "the release's own kata was used"
