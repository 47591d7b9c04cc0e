"""The self-study loop: `kata list`, `kata next`, `kata reset`, `kata watch`, and pristine stubs.

Each test works on a copy of the pristine stubs in a temporary folder (`--target`),
never on the checkout's own exercises/ (in a learner's copy it holds their work).
"""

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kata import commands, curriculum, pristine, progress, project
from kata.project import locate

NAMES = curriculum.names()


@pytest.fixture
def folder(tmp_path) -> Path:
    """A learner's folder holding the untouched stubs."""
    mine = tmp_path / "exercises"
    missing = pristine.write_stubs(mine)
    if missing:
        pytest.skip(f"no pristine stub of {', '.join(missing)} (no .kata/pristine/ snapshot, no git history)")
    return mine


def stub(name: str) -> str:
    source = pristine.stub_source(name)
    if source is None:
        pytest.skip(f"no pristine stub of {name} (no .kata/pristine/ snapshot, no git history)")
    return source


def all_done_but(folder: Path, *unfinished: str) -> None:
    progress.record(folder, {name: (5, 5) for name in NAMES if name not in unfinished})


# --- pristine stubs --------------------------------------------------------------------


def test_every_stub_is_a_stub_and_no_solution_is():
    project = locate()
    for name in NAMES:
        assert pristine.differences(f"{name}.py", stub(name)) == [], name
        if os.environ.get("CI"):   # a clean checkout: its exercises/ are the stubs (a learner's holds their work)
            assert pristine.differences(project.exercises / f"{name}.py") == [], name
        if project.has_solutions:
            assert not pristine.is_stub(project.solutions / f"{name}.py"), name


def test_a_stub_is_known_by_its_shape_not_by_a_list():
    devices = stub("devices")
    helper = devices + "\n\n# my notes\ndef _helper(x):\n    return x + 1\n"
    assert pristine.is_stub("devices.py", helper), "a helper of the learner's own does not make it work"
    written = devices.replace('def host_copy(t):', 'def host_copy(t):\n    return t.clone()\n\ndef _old(t):', 1)
    assert pristine.differences("devices.py", written) == ["`host_copy` is written"]
    assert pristine.differences("devices.py", devices.replace("def host_copy(", "def copy_of(")) == [
        "`host_copy` is not defined"]
    assert pristine.differences("devices.py", devices + "\ndef (:\n") == ["devices.py does not parse"]
    data = stub("data")
    assert pristine.is_stub("data.py", data)
    assert pristine.differences("data.py", data.replace("SMILING = None", "SMILING = 31")) == [
        "`SMILING` is 31, not the stub's None"]
    plotting = stub("plotting")
    source = plotting.replace("    def update(self, epoch, history):\n",
                              "    def update(self, epoch, history):\n        return None\n", 1)
    assert pristine.differences("plotting.py", source) == ["`LivePlot.update` is written"]
    with pytest.raises(curriculum.UnknownExercise, match="devices, data"):
        pristine.is_stub("nonsense.py", "")


def test_the_pristine_stub_comes_from_the_snapshot_then_git(tmp_path, folder):
    stub, root = (folder / "devices.py").read_text(), tmp_path / "clone"
    (root / "exercises").mkdir(parents=True)
    assert pristine.pristine_source("devices", root) is None, "no snapshot, no git: none"
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git = ["git", "-C", str(root), "-c", "user.name=k", "-c", "user.email=k@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    (root / "exercises" / "devices.py").write_text(stub)
    subprocess.run([*git, "add", "exercises/devices.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "stub"], check=True)
    (root / "exercises" / "devices.py").write_text(stub.replace("def host_copy(t):", "def host_copy(t):\n"
                                                                "    return t.clone()\n\ndef _was(t):", 1))
    subprocess.run([*git, "commit", "-qam", "my work"], check=True)
    assert pristine.pristine_source("devices", root) == stub, "the newest commit that holds a stub"
    snapshot = pristine.write_snapshot(folder, root)
    assert [p.name for p in snapshot] == [f"{name}.py" for name in NAMES]
    (root / pristine.SNAPSHOT_DIR / "devices.py").write_text(stub + "\n# the release's\n")
    assert pristine.pristine_source("devices", root).endswith("# the release's\n"), "the snapshot first"
    if locate().has_solutions:
        with pytest.raises(ValueError, match="not stubs"):
            pristine.write_snapshot(locate().solutions, tmp_path / "elsewhere")


# --- kata list, kata next --------------------------------------------------------------------


def test_kata_list_shows_each_exercises_progress_at_once(folder, capsys):
    progress.record(folder, {"devices": (37, 37), "data": (14, 23)})
    progress.mark_solution_viewed(folder, "model")
    start = time.perf_counter()
    assert commands.main(["list", "--target", str(folder)]) == 0
    assert time.perf_counter() - start < 1
    out = capsys.readouterr().out
    assert "done: 37/37 checks pass" in out and "14/23 checks pass, 9 failing" in out
    unchecked = len(curriculum.names()) - 2   # all but the two recorded
    assert "not checked yet; solution viewed" in out and out.count("not checked yet") == unchecked
    assert "Next: 2. data" in out


def test_kata_next_names_the_exercise_its_check_and_its_first_hint(folder, capsys):
    progress.record(folder, {"devices": (37, 37), "data": (14, 23)})
    assert commands.main(["next", "--target", str(folder)]) == 0
    out = capsys.readouterr().out
    data = curriculum.get("data")
    assert out.startswith(f"Next: 2. data: {data.title}")
    assert "14 of 23 checks passed" in out and "pytest " in out and "data.py`" in out
    topic = "" if "" in data.hint_topics else data.hint_topics[0]
    assert data.hint_levels(topic)[0].split()[0] in out and "`kata hint data`" in out
    all_done_but(folder)
    assert commands.main(["next", "--target", str(folder)]) == 0
    assert "Every exercise is done" in capsys.readouterr().out


def saved_later(file: Path) -> None:
    """As if ``file`` were saved after the last run (a minute from now: file times may lag the clock)."""
    later = time.time() + 60
    os.utime(file, (later, later))


def test_kata_next_and_list_notice_an_edit_made_after_the_last_run(folder, capsys):
    all_done_but(folder)
    saved_later(folder / "model.py")
    assert commands.main(["next", "--target", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Next: 3. model") and "8 of" not in out and "model.py was saved since" in out, out
    assert commands.main(["list", "--target", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "Next: 3. model" in out and "model.py changed since" in out and out.count("changed since") == 1, out
    assert "5/5 checks pass" in out, "what the last run found is still shown"
    progress.record(folder, {"model": (8, 8)}, started=time.time() + 120)   # a run that began after that save
    assert commands.main(["next", "--target", str(folder)]) == 0
    assert "Every exercise is done" in capsys.readouterr().out, "a run after the edit brings it up to date"


# --- kata reset --------------------------------------------------------------------------------


def test_kata_reset_restores_the_stub_and_keeps_numbered_backups(folder, capsys, monkeypatch):
    stub = pristine.pristine_source("devices")
    if stub is None:
        pytest.skip("this checkout has no pristine snapshot and no git history")
    file = folder / "devices.py"
    file.write_text("my work\n")
    progress.record(folder, {"devices": (30, 37)})
    monkeypatch.setattr(sys, "stdin", _Input("n\n"))
    assert commands.main(["reset", "devices", "--target", str(folder)]) == 1
    assert file.read_text() == "my work\n" and "Nothing changed" in capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", _Input("y\n"))
    assert commands.main(["reset", "devices", "--target", str(folder)]) == 0
    assert file.read_text() == stub and (folder / "devices.py.~1~").read_text() == "my work\n"
    assert "devices.py.~1~" in capsys.readouterr().out
    assert progress.read(folder)["devices"].passed == 0
    file.write_text("more work\n")
    assert commands.main(["reset", "devices", "--yes", "--target", str(folder)]) == 0
    assert (folder / "devices.py.~2~").read_text() == "more work\n", "a backup is never overwritten"
    assert (folder / "devices.py.~1~").read_text() == "my work\n"
    assert commands.main(["reset", "devices", "--yes", "--target", str(folder)]) == 0
    assert "nothing to do" in capsys.readouterr().out and not (folder / "devices.py.~3~").exists()


def test_kata_reset_of_an_unknown_name_lists_the_names(capsys):
    assert commands.main(["reset", "device", "--yes"]) == 2
    assert "devices, data, model, training, plotting, sync" in capsys.readouterr().err


class _Input:
    def __init__(self, text):
        self.lines = text.splitlines(keepends=True)

    def readline(self):
        return self.lines.pop(0) if self.lines else ""


# --- kata watch ---------------------------------------------------------------------------------


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """As if the kata were installed from a wheel (no checkout beside the package), run from tmp_path."""
    monkeypatch.delenv("KATA_HOME", raising=False)
    monkeypatch.setattr(project, "PACKAGE_DIR", tmp_path / "site-packages" / "kata")
    monkeypatch.chdir(tmp_path)
    locate.cache_clear()
    yield tmp_path
    locate.cache_clear()


def test_kata_watch_outside_a_checkout_says_where_it_looked(nowhere, capsys):
    assert commands.main(["watch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kata watch: ") and str(nowhere) in err and "site-packages" in err


class Watcher:
    """`kata watch` in a process of its own, its output read line by line (``hide``: a folder put
    first on its path, to hide packages)."""

    def __init__(self, folder: Path, *options: str, hide: Path | None = None):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("PYTEST_ADDOPTS", None)
        if hide is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(hide), *filter(None, [env.get("PYTHONPATH")])])
        self.proc = subprocess.Popen([sys.executable, "-m", "kata", "watch", "--target", str(folder), *options],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def until(self, marker: str, timeout: float = 90) -> str:
        """The output from here to the first line holding ``marker``."""
        got, deadline = [], time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = ""
            if line is None or time.monotonic() > deadline:
                raise AssertionError(f"no {marker!r} in kata watch's output:\n" + "".join(self.seen + got))
            got.append(line)
            if marker in line:
                self.seen += got
                return "".join(got)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def watcher():
    started = []
    yield lambda *args, **kwargs: started.append(Watcher(*args, **kwargs)) or started[-1]
    for w in started:
        w.close()


def test_kata_watch_rechecks_on_save_and_survives_a_syntax_error(folder, watcher):
    all_done_but(folder, "model")
    w = watcher(folder)
    first = w.until("to quit")
    assert "kata watch: 3. model" in first and "`build_model` is not written yet" in first
    model = f"  3. {'model':<{curriculum.name_width()}}   0/8"   # the names as wide as the curriculum's longest
    assert "  1. devices " in first and model in first and "every check stops at the stub" in first
    (folder / "model.py").write_text("import torch.nn as nn\n\ndef build_model(:\n    pass\n")
    second = w.until("to quit")
    assert "model.py failed to import" in second and "SyntaxError" in second
    w.proc.stdin.write("q\n")
    w.proc.stdin.flush()
    assert "kata watch: stopped." in w.until("stopped")
    assert w.proc.wait(timeout=10) == 0


@pytest.mark.slow
def test_kata_watch_moves_on_when_the_exercise_passes_and_stops_a_hung_round(folder, watcher):
    all_done_but(folder, "model", "sync")
    # A round's limit well above what model's checks take on a loaded machine; the hung check is
    # stopped by its own limit (4 s), or the round by its.
    w = watcher(folder, "--timeout", "60", "--check-timeout", "4")
    assert "kata watch: 3. model" in w.until("to quit")
    (folder / "model.py").write_text((locate().solutions / "model.py").read_text())
    moved = w.until("to quit")
    assert "3. model is done: on to 6. sync." in moved and "kata watch: 6. sync" in moved
    assert progress.read(folder)["model"].done
    (folder / "sync.py").write_text("def train_epoch(model, dl, loss_fn, optimizer, device):\n    while True:\n"
                                    "        pass\n")
    hung = w.until("to quit")
    assert "ran past 60 s and were stopped" in hung or "did not finish within 4 s" in hung, hung
    (folder / "sync.py").write_text((locate().solutions / "sync.py").read_text())
    assert "Every exercise is done" in w.until("Every exercise is done")
    assert "Still watching" in w.until("to quit"), "it keeps watching"
    w.proc.stdin.write("q\n")
    w.proc.stdin.flush()
    assert w.proc.wait(timeout=10) == 0


def test_kata_watch_keeps_watching_when_all_is_done_and_works_without_watchfiles(folder, watcher, tmp_path):
    hidden = tmp_path / "hidden" / "watchfiles"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('not installed here')\n")
    all_done_but(folder)
    w = watcher(folder, hide=hidden.parent)
    first = w.until("to quit")
    assert "watchfiles is not installed" in first, first
    assert sum("watchfiles" in line for line in first.splitlines()) == 1, "said in one line"
    assert "Every exercise is done" in first and "Still watching" in first
    saved_later(folder / "model.py")   # an edit after every exercise was recorded done
    second = w.until("to quit")
    assert "kata watch: 3. model" in second and "`build_model` is not written yet" in second, second
    assert "and 7 more checks fail for the same reason" in second and second.count("not written yet") == 1
    w.proc.stdin.write("q\n")
    w.proc.stdin.flush()
    assert "kata watch: stopped." in w.until("stopped")
    assert w.proc.wait(timeout=10) == 0
