"""The grader against students who want the marks without the work, on every kind of machine (slow).

Each attack of tests/selftest/test_grade_samples.py is a hostile submission here:

- a forged verdict on untouched stubs earns nothing (the checks read the records' answers in the grader,
  without the hand-in's code); forged on top of wrong code, it earns no more than the wrong code alone;
- the answers on the teacher's disk are out of reach, and neither they nor an earlier hand-in
  are in the memory a submission's processes start with;
- what the sandbox must stop is stopped (each attack raises when it gets through, which would
  cost the module its points), and nothing the submission started outlives it;
- code that patches a library to compute the right numbers computes them: it keeps its points,
  with a note for review; the same patch over a wrong declaration (a learning rate, a dropout rate) earns
  nothing for the checks that hold the learner to it (read from its source), and its feedback says what;
- no hand-in spoils the next one or the run: what it leaves (a read-only folder, modules, shared
  memory, a process that outlives it) or writes (a FIFO for a report, a line nested 100,000 deep,
  each line twice), graded on one job, each followed by a copy of the solutions that must keep every
  point and find nothing left; and code that computes only where it sees the grader's traces earns
  nothing.

Then the other machines: grading as an ordinary user (as root, a user made with useradd), where
bubblewrap is refused (as root: its own user per job), both with what a hand-in may leave, with
--no-sandbox; the Gradescope bundle
end to end; a submission cut short by its time limit, a hung check, a module that exits.
"""

import csv
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import test_grade_samples as samples
from test_grade import kata
from test_grade_samples import ANSWERS, FORGING, INDEPENDENT, attack, sources, with_attack, write, wrong_learning_rate

from kata import curriculum
from kata.checks.mutants import mutated
from kata.project import locate

NAMES = curriculum.names()
POINTS = {ex.name: ex.points for ex in curriculum.exercises()}
FULL = sum(POINTS.values())
TEST_TIMEOUT = 15

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
HAVE_BWRAP = sys.platform.startswith("linux") and shutil.which("bwrap") is not None


class Host:
    """What a submission must not reach: Unix sockets (a file, an abstract one) and a TCP port, listening."""

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
        return {"marker": self.marker, "out": str(out), "sock": self.sock, "port": self.port}

    def close(self) -> None:
        for server in self.servers:
            server.close()


def run(root: Path, modules: dict[str, dict], *options) -> tuple[Path, dict, dict]:
    out = root / "out"
    paths = [str(write(root / "subs" / name, found)) for name, found in modules.items()]
    assert kata("grade", *paths, "--out", out, "--jobs", "2", "--test-timeout", TEST_TIMEOUT, "--timeout", "240",
                "--quiet", *options) == 0
    with open(out / "grades.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    return out, rows, json.loads((out / "summary.json").read_text())


def total(rows, name) -> float:
    return float(rows[name]["total"])


def left_behind(marker: str) -> list[str]:
    """Processes that hold the attack's marker, or a grading server, still running."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if pid.isdigit() and int(pid) != os.getpid() and (b"kata.grading.server" in cmdline or marker.encode()
                                                           in cmdline):
            found.append(f"{pid}: {cmdline[:120]!r}")
    return found


def only(**modules: str) -> dict[str, str | None]:
    """A submission of some modules only (the rest missing: their checks fail at once, which keeps this quick)."""
    return {name: modules.get(name) for name in NAMES}


# The patches of torch's optimizer graded with the class (test_declared.py tries each of FORGED_TRAINING's).
FORGED_OPTIM = ("step", "functional", "observer-removed", "decoy")

# Where each sandbox attack goes in the one submission that carries them all (the rest: the solutions).
SANDBOX_HOMES = {"read-secrets": "devices", "host-socket": "data", "many-processes": "model",
                 "detached-writer": "plotting"}


def attack_hand_ins(host: Host, out: Path) -> dict[str, dict]:
    """The hostile hand-ins, graded into ``out`` beside test_grade.py's class (tests/selftest/conftest.py)."""
    values = host.values(out)
    solution = sources()
    subs = {"independent": dict(INDEPENDENT), "wrong-lr": only(training=wrong_learning_rate())}
    for kind in FORGING + ANSWERS:
        subs[f"{kind}-stubs"] = with_attack(kind, "stubs", **values)
    subs["sandbox-solutions"] = {name: (attack(kind, name, **values) + "\n" if kind else "") + solution[name]
                                 for name, kind in ((n, next((k for k, h in SANDBOX_HOMES.items() if h == n), None))
                                                    for n in NAMES)}
    subs["disk-hog"] = only(devices=attack("disk-hog", "devices") + "\n" + solution["devices"])
    subs["forge-log-wrong-lr"] = only(training=attack("forge-log", "training") + "\n" + wrong_learning_rate())
    subs["patched-optim"] = only(training=samples.patched_training())
    subs.update({f"forged-optim-{kind}": only(training=samples.forged_training(kind)) for kind in FORGED_OPTIM})
    subs["forged-dropout"] = only(model=samples.forged_model())
    subs["book-evaluate"] = only(training=sources("stubs")["training"] + samples.BOOK_EVALUATE)
    return subs


@pytest.fixture(scope="module")
def attacked(class_run):
    """(out folder, grades.csv rows, summary.json, the Host they attacked), graded with the class."""
    assert class_run[3] is not None, "the attacks are graded with the class under --slow"
    return class_run


def test_correct_code_still_scores_full(attacked):
    _, rows, _, _ = attacked
    assert total(rows, "independent") == FULL and rows["independent"]["status"] == "ok", rows["independent"]


@pytest.mark.parametrize("kind", FORGING + ANSWERS)
def test_untouched_stubs_with_an_attack_earn_nothing(attacked, kind):
    _, rows, summary, _ = attacked
    name = f"{kind}-stubs"
    assert total(rows, name) == 0, (name, rows[name])


def test_verdicts_forged_on_top_of_wrong_code_gain_nothing(attacked):
    _, rows, _, _ = attacked
    assert total(rows, "forge-log-wrong-lr") <= total(rows, "wrong-lr") < POINTS["training"], rows


def test_what_the_sandbox_must_stop_is_stopped(attacked):
    out, rows, summary, host = attacked
    name = "sandbox-solutions"
    assert total(rows, name) == FULL, (name, rows[name]["status"], (out / "feedback" / f"{name}.md").read_text()[:3000])
    assert "hacked" not in (out / "grades.csv").read_text() and not host.reached()
    assert not Path(f"/tmp/{host.marker}-alive").exists() and not left_behind(host.marker)


def test_a_full_disk_is_said_and_stays_the_submissions_own(attacked):
    _, rows, _, _ = attacked
    assert "filled its disk" in rows["disk-hog"]["status"], rows["disk-hog"]["status"]


def test_a_library_patched_to_compute_the_right_numbers_computes_them(attacked):
    _, rows, _, _ = attacked
    assert total(rows, "patched-optim") == POINTS["training"], rows["patched-optim"]
    assert "forged" not in rows["patched-optim"]["status"]


@pytest.mark.parametrize("kind", FORGED_OPTIM)
def test_a_wrong_learning_rate_under_a_patched_optimizer_earns_no_more_than_the_wrong_rate(attacked, kind):
    out, rows, _, _ = attacked
    name = f"forged-optim-{kind}"
    assert total(rows, name) <= total(rows, "wrong-lr") < POINTS["training"], (rows[name], rows["wrong-lr"])
    assert "lr=0.01" in (out / "feedback" / f"{name}.md").read_text(encoding="utf-8"), rows[name]["status"]


def test_the_books_computation_taken_from_the_kata_earns_nothing_and_is_noted(attacked):
    """A stub whose evaluate is the checks' own helper (`from kata import checks`): the sandbox that asks its records
    holds no such helper, so its records compute nothing; the import is noted."""
    _, rows, _, _ = attacked
    assert total(rows, "book-evaluate") == 0, rows["book-evaluate"]
    status = rows["book-evaluate"]["status"]
    assert "import kata.checks" in status, status


def test_a_wrong_dropout_rate_under_a_patched_layer_loses_the_layers_check(attacked):
    out, rows, _, _ = attacked
    assert total(rows, "forged-dropout") < POINTS["model"], rows["forged-dropout"]
    assert "p=0.2" in (out / "feedback" / "forged-dropout.md").read_text(encoding="utf-8"), rows["forged-dropout"]


# --- on every machine ----------------------------------------------------------------------------------------


def small_class(host: Host, out: Path, leftovers: bool = False) -> dict[str, dict]:
    """Four hand-ins of one or two modules; with ``leftovers``, each of LEFTOVERS and a victim after it."""
    values, solution = host.values(out), sources()
    good = only(devices=solution["devices"], sync=solution["sync"])
    return {"good": good,
            "forged": only(devices=attack("forge-log", "devices") + "\n" + sources("stubs")["devices"]),
            "secrets": only(devices=attack("read-secrets", "devices", **values) + "\n" + solution["devices"]),
            "processes": only(devices=attack("many-processes", "devices", **values) + "\n" + solution["devices"]),
            **(interleaved(samples.LEFTOVERS, good) if leftovers else {})}


def grade_small_class(root: Path, expected: str, contained: bool, *options: str, leftovers: bool = False) -> dict:
    """Host what the attacks must not reach, grade the small class in ``root``, stop hosting, and check the grades
    (the sandbox the header names is ``expected``; ``contained``: the secrets stay out of reach; ``leftovers``:
    with LEFTOVERS, each on the job of the victim after it); the summary."""
    host = Host(root)
    try:
        out, rows, summary = run(root, small_class(host, root / "out", leftovers), *options,
                                 *(["--jobs", "1"] if leftovers else []))
    finally:
        host.close()
    check_small_class(rows, summary, expected, contained)
    if leftovers:
        check_interleaved(out, rows, samples.LEFTOVERS, POINTS["devices"] + POINTS["sync"], rows["good"]["status"])
    return summary


def check_small_class(rows, summary, expected: str, contained: bool):
    assert any(line.startswith("sandbox: " + expected) for line in summary["protections"]), summary["protections"]
    assert total(rows, "good") == POINTS["devices"] + POINTS["sync"] and total(rows, "forged") == 0, rows
    assert total(rows, "processes") == POINTS["devices"], rows["processes"]
    if contained:
        assert total(rows, "secrets") == POINTS["devices"], rows["secrets"]


def interleaved(kinds, modules: dict[str, str | None]) -> dict[str, dict]:
    """Each hostile hand-in of ``kinds`` (one module), followed by a victim: ``modules``, which raise on import when
    they find what an earlier hand-in left."""
    subs = {}
    for kind in kinds:
        subs[kind], subs[f"after-{kind}"] = only(devices=samples.hostile(kind)), samples.victim(modules)
    return subs


def check_interleaved(out: Path, rows: dict, kinds, full: float, status: str = "ok") -> None:
    """Every row written; each victim untouched by the hand-in before it (``full`` points, ``status``); each hostile
    hand-in earns no more than its module computes (nothing, where it forges or probes)."""
    for name in rows:
        assert (out / "feedback" / f"{name}.md").is_file() and (out / "logs" / f"{name}.log").is_file(), name
    for kind in kinds:
        name = f"after-{kind}"
        log = (out / "logs" / f"{name}.log").read_text()
        assert total(rows, name) == full and rows[name]["status"] == status, (name, rows[name], log[-3000:])
        assert "other than it found it" not in log, (name, log[-3000:])
        assert total(rows, kind) <= POINTS["devices"], (kind, rows[kind])
    for kind in set(kinds) & {"twice", "write-after-end", "probe-env"}:
        assert total(rows, kind) == 0, (kind, rows[kind], (out / "logs" / f"{kind}.log").read_text()[-3000:])
    if "module-left" in kinds:
        assert float(rows["module-left"]["sync"]) == 0, rows["module-left"]
    if "fifo-report" in kinds:
        assert "not a regular file" in (out / "feedback" / "fifo-report.md").read_text()


def test_no_hand_in_spoils_the_next_one_or_the_run(tmp_path):
    """What one hand-in may leave or write for the next (a read-only folder, modules, shared memory, a detached
    writer) or do to the run (a FIFO report, a line nested 100,000 deep, each line written twice), and a probe
    for the grader's traces: each graded on one job, with a hand-in of two correct modules right after it (any
    module left for it would show in its points), which must keep every point and find nothing left."""
    solution = sources()
    victims = only(devices=solution["devices"], sync=solution["sync"])
    out, rows, _summary = run(tmp_path, {"good": victims, **interleaved(samples.HOSTILE, victims)}, "--jobs", "1")
    check_interleaved(out, rows, samples.HOSTILE, POINTS["devices"] + POINTS["sync"], rows["good"]["status"])


# Reads every writable page of its own process for text it must not find there, never held whole here: each
# needle as head and tail apart. Found, it costs the module its points.
MEMORY_SCAN = """
def _seen_here(needles):
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            if not perms.startswith("rw") or end - start > 1 << 30:
                continue
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            for head, tail in needles:
                at = data.find(head)
                while at >= 0:
                    if data[at + len(head):at + len(head) + len(tail)] == tail:
                        return head + tail
                    at = data.find(head, at + 1)
    return None


_SEEN = _seen_here({needles!r})
if _SEEN:
    raise SystemExit(f"found in this process's memory: {{_SEEN!r}}")
"""
REFERENCE_ONLY = b"clears the figure and draws both panels afresh"   # a comment of solutions/plotting.py's


def test_no_submission_finds_the_reference_or_an_earlier_one_in_its_memory(tmp_path):
    """A server serves the reference, then one hand-in after another, and forks each child from itself; none may
    inherit what an earlier run sent (its files) or left (its report). Each of these two hand-ins looks for the
    other's marker and for a comment of the reference solutions in the memory of the processes that run it."""
    markers = {name: secrets.token_hex(12).encode() for name in ("first", "second")}
    subs = {}
    for name, other in (("first", "second"), ("second", "first")):
        needles = [(markers[other][:12], markers[other][12:]), (REFERENCE_ONLY[:20], REFERENCE_ONLY[20:])]
        subs[name] = only(devices=f"# {markers[name].decode()}\n" + MEMORY_SCAN.format(needles=needles) + "\n"
                          + sources()["devices"])
    out = tmp_path / "out"
    paths = [str(write(tmp_path / "subs" / name, found)) for name, found in subs.items()]
    assert kata("grade", *paths, "--out", out, "--jobs", "1", "--test-timeout", TEST_TIMEOUT, "--quiet") == 0
    with open(out / "grades.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    for name in subs:
        log = (out / "logs" / f"{name}.log").read_text()
        assert total(rows, name) == POINTS["devices"], (name, rows[name]["status"], log[-3000:])


@pytest.mark.skipif(not HAVE_BWRAP, reason="needs bubblewrap (apt-get install bubblewrap); CI has it")
def test_an_ordinary_user_grades_in_bubblewrap(tmp_path):
    """As an ordinary user: bubblewrap in a user namespace of the teacher's own. As root, this makes a user with
    useradd (CI does) and grades as that user."""
    if os.geteuid() != 0:
        grade_small_class(tmp_path, "bubblewrap", contained=True, leftovers=True)
        return
    user = "kata-teacher"
    if shutil.which("useradd") is None:
        pytest.skip("as root, this needs useradd to make an ordinary user")
    try:
        pwd.getpwnam(user)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", user], check=True)
    home = Path(pwd.getpwnam(user).pw_dir)
    probe = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", sys.executable, "-c",
                            "import kata"], capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"{user} can't run this Python or read the kata here (CI makes them readable): "
                    f"{probe.stderr.strip().splitlines()[-1:]}")
    work = Path(subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "mktemp", "-d",
                                "-p", str(home)], capture_output=True, text=True, check=True).stdout.strip())
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
              "from test_grade_attacks import grade_as_this_user; grade_as_this_user(sys.argv[1])")
    graded = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", sys.executable, "-c",
                             script, str(work)], capture_output=True, text=True, timeout=1500,
                            env={**os.environ, "HOME": str(home), "KATA_HOME": str(locate().root)})
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]


def grade_as_this_user(work: str) -> None:
    """In the ordinary user's process: grade the small class (with what a hand-in may leave), then check it."""
    summary = grade_small_class(Path(work), "bubblewrap", contained=True, leftovers=True)
    assert any("your user, in a user namespace" in line for line in summary["protections"]), summary["protections"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the fallback without bubblewrap is root's")
def test_without_bubblewrap_root_grades_as_a_user_of_its_own_and_says_what_is_open(tmp_path, monkeypatch):
    import kata.grading.sandbox as sandbox

    which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None if name == "bwrap" else which(name))
    probe = subprocess.run(["setpriv", "--reuid=61000", "--regid=61000", "--clear-groups", sys.executable, "-c",
                            "import kata.records"], capture_output=True, text=True)
    if probe.returncode:
        pytest.skip("Python or the kata is not readable by other users here (CI makes them readable)")
    summary = grade_small_class(tmp_path, "no bubblewrap", contained=False, leftovers=True)
    assert any("unprivileged user of its own" in line for line in summary["protections"])


def test_no_sandbox_says_plainly_what_is_left_open(tmp_path):
    summary = grade_small_class(tmp_path, "none (--no-sandbox)", False, "--no-sandbox")
    assert any("Grade only code you trust" in line for line in summary["protections"])


# --- crashes, hangs, time ----------------------------------------------------------------------------------------


# The model's first build hangs (one check ends at its time limit; the others build a model as they should).
HANGS_ONCE = ("def build_model() -> nn.Sequential:\n",
              "HUNG = []\n\n\ndef build_model() -> nn.Sequential:\n    if not HUNG:\n        HUNG.append(True)\n"
              "        while True:\n            pass\n")


def test_an_exit_a_hung_check_and_an_endless_import_cost_only_their_exercises(tmp_path):
    crashy = sources(devices="import os\nos._exit(0)\n" + sources()["devices"], model=mutated("model", HANGS_ONCE),
                     training="while True:\n    pass\n" + sources()["training"])
    # A check's limit well above what a check takes on a loaded machine: the hung one costs that much.
    out, rows, summary = run(tmp_path, {"crashy": crashy}, "--test-timeout", "8")
    got = summary["submissions"]["crashy"]["exercises"]
    model = got.pop("model")
    assert 0 < model < POINTS["model"], f"model: {model} of {POINTS['model']}, where one check of 8 hung"
    assert got == {**{n: float(POINTS[n]) for n in NAMES if n != "model"}, "devices": 0.0, "training": 0.0}, got
    assert "ended early" in rows["crashy"]["status"], rows["crashy"]["status"]
    feedback = (out / "feedback" / "crashy.md").read_text()
    assert "the test process exited" in feedback or "ended early" in feedback


def test_a_timed_out_submission_keeps_what_ran_and_says_what_did_not(tmp_path):
    header = "def train_epoch(model, dl, loss_fn, optimizer, device):\n"
    slow = sources(sync=mutated("sync", (header, header + "    __import__('time').sleep(4)\n")))
    out = tmp_path / "out"
    write(tmp_path / "slow", slow)
    assert kata("grade", tmp_path / "slow", "--out", out, "--timeout", "30", "--test-timeout", "30", "--jobs", "1",
                "--quiet") == 0
    with open(out / "grades.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert "timed out" in row["status"] and "did not run" in row["status"], row["status"]
    assert float(row["sync"]) < POINTS["sync"]


# --- Gradescope ------------------------------------------------------------------------------------------------


def test_run_autograder_grades_with_the_bundles_own_copy_into_results_json(tmp_path):
    root = tmp_path / "autograder"
    assert kata("gradescope", root / "source", "--test-timeout", str(TEST_TIMEOUT)) == 0
    write(root / "submission", sources(data=mutated("data", ("SMILING = 31", "SMILING = 18"))))
    (root / "submission" / "conftest.py").write_text("raise SystemExit('a submission conftest ran')\n")
    env = {**os.environ, "KATA_AUTOGRADER_ROOT": str(root), "KATA_PYTHON": sys.executable}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=1200, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert FULL - POINTS["data"] < data["score"] < FULL, data["output"][:2000]
    failed = [t for t in data["tests"] if t.get("status") == "failed"]
    assert failed and all(t["tags"] == ["data"] for t in failed)
    summary = json.loads((root / "grading" / "summary.json").read_text())
    bundle = root / "source" / "device-kata"
    assert summary["kata"] == str(bundle / "kata") and summary["project"] == str(bundle), "the bundle's own copy"
    env["KATA_PYTHON"] = str(tmp_path / "no-such-python")
    (root / "results" / "results.json").unlink()
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                   timeout=60, cwd=root)
    data = json.loads((root / "results" / "results.json").read_text())
    assert data["score"] == 0 and "autograder failed" in data["output"]


def test_the_release_runs_its_own_checks_without_the_solutions(tmp_path):
    out = tmp_path / "release"
    assert kata("release", out) == 0
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "KATA_HOME")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"], cwd=out, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "xfailed" in done.stdout and " failed" not in done.stdout
