"""The records asked ahead on a second core (kata/harness/prefetch.py): a learner reads the same run either way.

A learner's run of several exercises forks a helper that asks the last exercises' records while the run asks the
first ones. These run `pytest --target FOLDER` as a learner does, in a fresh process (the helper is forked only
from one that never installed the simulated accelerator), on a folder with a mistake in each of three exercises:
a wrong value where the run asks, and, where the helper asks, an error raised in the learner's code (a record
keeps it as data), a wrong label, prints and a warning. The run reads the same, line for line, with the helper and
without it (``-p no:kata-prefetch``), and so does its report log (what each check captured, each warning); the
learner's code did run in two processes; a helper that dies leaves the run's process to ask the rest itself; and
an endless loop where the helper asks reads as it does without it, each check that meets it naming its line.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kata.checks.mutants import mutated
from kata.project import locate

ROOT = locate().root
EXERCISES = ("devices", "model", "plotting")   # none forks a laptop: each process the learner's code runs in is ours
MISTAKES = {
    "devices": [("        for tensor in obj.buffers():\n            return tensor.device\n", "")],
    "plotting": [("def plot_history(history):\n", "def plot_history(history):\n    _seen()\n"
                  "    print('plot_history was called')\n    warnings.warn('a history of tensors?')\n"),
                 ("label='Train loss'", "label='Training loss'"),
                 ("    def update(self, epoch, history):\n", "    def update(self, epoch, history):\n"
                  "        print(f'update at epoch {epoch}')\n"
                  "        if epoch == 2:\n            raise ValueError('no third epoch')\n")],
}
# Each process that runs plot_history writes its pid to $SEEN; in the helper, with $DIE set, it ends there.
SEEN = '''import os, warnings


def _seen():
    with open(os.environ["SEEN"], "a") as out:
        out.write(f"{os.getpid()}\\n")
    if os.environ.get("DIE") and os.getppid() != int(os.environ["DIE"]):
        os._exit(3)   # the helper (the run's process is the test's child), gone mid-record


'''


def folder_with_mistakes(tmp_path: Path) -> Path:
    folder = tmp_path / "hand-in"
    folder.mkdir()
    for name in EXERCISES:
        source = mutated(name, *MISTAKES.get(name, []), before=SEEN if name == "plotting" else "")
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
    return folder


def learner_run(folder: Path, seen: Path, *more: str, die: bool = False,
                exercises=EXERCISES) -> tuple[list[str], list[dict]]:
    """The run's terminal, and its report log: each check's reports (what it captured among them) and each warning
    (pytest-reportlog), as a learner's run of ``folder`` gives them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KATA_LANG"))}
    env.update(COLUMNS="100", SEEN=str(seen), **({"DIE": str(os.getpid())} if die else {}))
    checks = [str(locate().checks_of(name)) for name in exercises]
    log = seen.with_name(f"{seen.name}.jsonl")
    done = subprocess.run([sys.executable, "-m", "pytest", "--target", str(folder), *checks, "-p", "no:cacheprovider",
                           "--report-log", str(log), *more], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    # what may differ: the time a run took, and where its log went
    text = [line for line in re.sub(r"\bin \d+\.\d+s\b", "in Ns", done.stdout + done.stderr).splitlines()
            if "report log file" not in line]
    reports = [{k: v for k, v in json.loads(line).items() if k not in ("duration", "start", "stop")}
               for line in log.read_text(encoding="utf-8").splitlines()]
    return text, [r for r in reports if r["$report_type"] in ("TestReport", "WarningMessage")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    linux = sys.platform.startswith("linux")
    if not (linux and len(os.sched_getaffinity(0)) >= 2) or any(Path("/dev").glob("nvidia*")):
        pytest.skip("the helper is forked only on Linux with two CPUs and no GPU: here every record is asked in one "
                    "process")
    tmp = tmp_path_factory.mktemp("prefetch")
    folder = folder_with_mistakes(tmp)
    found = {}
    for name, more in (("with", ()), ("without", ("-p", "no:kata-prefetch"))):
        seen = tmp / f"seen-{name}"
        found[name] = (learner_run(folder, seen, *more), set(seen.read_text().split()))
    return folder, found


def test_a_learner_reads_the_same_run_with_the_helper_and_without_it(runs):
    _folder, found = runs
    (with_helper, _), (without, _) = found["with"], found["without"]
    text = "\n".join(without[0])
    for expected in ("ValueError: no third epoch", "Training loss", "device_of"):
        assert expected in text, f"the run without the helper does not show {expected!r}:\n{text}"
    said = json.dumps(without[1])
    for expected in ("UserWarning", "a history of tensors?", "plot_history was called", "update at epoch 1"):
        assert expected in said, f"the report log without the helper does not hold {expected!r}"
    assert with_helper[0] == without[0]
    assert with_helper[1] == without[1]


def test_the_learners_code_ran_in_two_processes_only_with_the_helper(runs):
    _folder, found = runs
    assert len(found["with"][1]) == 2, found["with"][1]
    assert len(found["without"][1]) == 1, found["without"][1]


def test_a_helper_that_dies_leaves_the_rest_to_the_runs_process(runs, tmp_path):
    folder, found = runs
    seen = tmp_path / "seen"
    assert learner_run(folder, seen, die=True) == found["without"][0]
    assert len(set(seen.read_text().split())) == 2   # the helper died where it met plot_history; the run went on


def test_one_exercise_forks_no_helper(tmp_path):
    folder = tmp_path / "one"
    folder.mkdir()
    shutil.copy(folder_with_mistakes(tmp_path) / "plotting.py", folder / "plotting.py")
    seen = tmp_path / "seen"
    learner_run(folder, seen)
    assert len(set(seen.read_text().split())) == 1


@pytest.mark.slow
def test_an_endless_loop_reads_the_same_with_the_helper_and_without_it(tmp_path):
    # The helper gives up on a record in a quarter of a check's time limit: the check that waited for it still
    # meets the loop itself, within its own limit, where the learner's line is named.
    folder = tmp_path / "endless"
    folder.mkdir()
    (folder / "devices.py").write_text(mutated("devices"), encoding="utf-8")
    (folder / "plotting.py").write_text(mutated("plotting", ("    def update(self, epoch, history):\n",
                                                             "    def update(self, epoch, history):\n"
                                                             "        while epoch == 1:\n            pass\n")),
                                        encoding="utf-8")
    with_helper, without = (learner_run(folder, tmp_path / name, "--timeout", "4", *more, exercises=("devices",
                            "plotting")) for name, more in (("with", ()), ("without", ("-p", "no:kata-prefetch"))))
    assert "did not finish within 4 s" in "\n".join(without[0]) and "while epoch == 1" in "\n".join(without[0])
    assert with_helper == without
