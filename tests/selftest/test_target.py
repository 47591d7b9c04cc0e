"""The harness: which folder a run checks, and how its modules are imported."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kata import curriculum, pristine
from kata.harness.target import Target, TargetError, find_target
from kata.project import locate

PROJECT_ROOT = locate().root
SOLUTIONS = locate().solutions
EXERCISES = locate().exercises
NAMES = {ex.name: ex.names for ex in curriculum.exercises()}


def write(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


# --- the exercises' modules --------------------------------------------------


@pytest.mark.parametrize("name", list(NAMES))
def test_every_stub_and_solution_defines_the_contract_names(name, tmp_path):
    stubs = tmp_path / "stubs"   # the pristine stubs: in a learner's copy exercises/ holds their work
    if pristine.write_stubs(stubs):
        pytest.skip("no pristine copy of the stubs was found (no .kata/pristine/ snapshot, no git history)")
    for folder in (stubs, SOLUTIONS):
        module = Target(folder).load(name)
        missing = [n for n in NAMES[name] if not hasattr(module, n)]
        assert not missing, f"{folder.name}/{name}.py lacks {missing}"


# --- finding the target ------------------------------------------------------


def test_find_target_accepts_a_folder_a_parent_of_exercises_or_a_module_file(tmp_path):
    write(tmp_path / "alice", "data.py", "X = 1\n")
    write(tmp_path / "bob" / "exercises", "model.py", "X = 1\n")
    assert find_target(tmp_path / "alice") == tmp_path / "alice"
    assert find_target(tmp_path / "bob") == tmp_path / "bob" / "exercises"
    assert find_target(tmp_path / "alice" / "data.py") == tmp_path / "alice"
    assert find_target(EXERCISES) == EXERCISES


def test_find_target_refuses_the_project_root_tests_and_other_files(tmp_path):
    write(tmp_path, "notes.py", "X = 1\n")
    assert find_target(PROJECT_ROOT) is None, "plain `pytest .` in the project is its self-check"
    assert find_target(PROJECT_ROOT / "tests") is None
    assert find_target(tmp_path) is None
    assert find_target(tmp_path / "notes.py") is None
    assert find_target(tmp_path / "missing") is None


# --- loading -----------------------------------------------------------------


def test_modules_load_from_the_target_folder_only(tmp_path, monkeypatch):
    write(tmp_path / "stray", "data.py", "WHO = 'stray copy'\n")
    write(tmp_path / "target", "data.py", "WHO = 'target'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "stray"))
    monkeypatch.chdir(tmp_path / "stray")
    assert Target(tmp_path / "target").load("data").WHO == "target"


def test_two_targets_load_side_by_side_and_each_load_is_fresh(tmp_path):
    write(tmp_path / "a", "data.py", "WHO = 'a'\n")
    write(tmp_path / "b", "data.py", "WHO = 'b'\n")
    a, b = Target(tmp_path / "a"), Target(tmp_path / "b")
    assert (a.load("data").WHO, b.load("data").WHO) == ("a", "b")
    assert a.load("data") is a.load("data"), "one target imports a module once"
    (tmp_path / "a" / "data.py").write_text("WHO = 'a, edited'\n")
    assert Target(tmp_path / "a").load("data").WHO == "a, edited", "a new run imports afresh"


def test_modules_of_one_target_can_import_each_other_relatively(tmp_path):
    write(tmp_path, "devices.py", "def to_python(x):\n    return 42\n")
    write(tmp_path, "training.py", "from .devices import to_python\nANSWER = to_python(None)\n")
    assert Target(tmp_path).load("training").ANSWER == 42


@pytest.mark.parametrize("source, expected", [
    ("def f(:\n", ["data.py failed to import (line 1)", "SyntaxError"]),
    ("import numpy\nraise ValueError('boom')\n", ["data.py failed to import (line 2", "ValueError: boom"]),
    ("import sys\nsys.exit(0)\n", ["data.py failed to import", "SystemExit", "keep top-level code"]),
    ("import os\nos.environ['X']\n", ["KeyError"]),
    ("from devices import to_python\n", ["No module named 'devices'", "from .devices import"]),
])
def test_a_module_that_fails_to_import_names_the_file_and_the_error(tmp_path, source, expected):
    write(tmp_path, "data.py", source)
    target = Target(tmp_path)
    with pytest.raises(TargetError) as info:
        target.load("data")
    for text in expected:
        assert text in str(info.value)
    with pytest.raises(TargetError):  # the failure is remembered, not re-run
        _ = target.module("data").train_transform


def test_a_missing_module_or_name_fails_with_a_pointer(tmp_path):
    write(tmp_path, "data.py", "SMILING = 31\n")
    target = Target(tmp_path)
    assert target.module("data").SMILING == 31
    with pytest.raises(TargetError, match=r"data.py defines no `get_smile`"):
        _ = target.module("data").get_smile
    with pytest.raises(TargetError, match=r"model.py does not exist"):
        _ = target.module("model").build_model
    with pytest.raises(AttributeError):  # a tool probing for other names gets a plain AttributeError
        _ = target.module("data").execute_example


def test_a_remembered_failure_is_raised_afresh_each_time(tmp_path):
    # Re-raising one stored exception grows its traceback by every raise; pytest then formats
    # each of those frames for every later check (a run of 100 failing checks took minutes).
    target = Target(tmp_path)
    depths = []
    for _ in range(3):
        with pytest.raises(TargetError) as info:
            target.load("model")
        depths.append(len(info.traceback))
    assert depths[0] == depths[1] == depths[2], f"the traceback grew with each raise: {depths}"


# --- whole runs --------------------------------------------------------------


def pytest_run(*args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_pytest_path_checks_a_submission_outside_the_project(tmp_path):
    # Alice's model is right, her data.py does not even parse, the rest is missing;
    # a broken copy of model.py lies in the folder pytest runs from.
    alice = tmp_path / "submissions" / "alice"
    alice.mkdir(parents=True)
    shutil.copy(SOLUTIONS / "model.py", alice / "model.py")
    write(alice, "data.py", "def get_smile(attr:\n")
    write(tmp_path, "model.py", "raise RuntimeError('the stray copy was imported')\n")
    checks = PROJECT_ROOT / "tests"
    run = pytest_run(str(alice), str(checks / "test_model.py"),
                     str(checks / "test_data.py::test_smiling_is_attribute_31"), cwd=tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "kata: submissions/alice" in out
    assert "the stray copy was imported" not in out
    assert "data.py failed to import (line 1)" in out
    assert re.search(r"3\. model +8/8 +passed +done", out), out
    assert re.search(r"2\. data +0/1 +passed", out), out


def test_a_stub_fails_every_check_and_the_run_ends_with_a_table(tmp_path):
    source = pristine.stub_source("model")
    if source is None:
        pytest.skip("exercises/model.py holds your work and no pristine copy of the stub was found")
    write(tmp_path / "exercises", "model.py", source)
    run = pytest_run("exercises/model.py", cwd=tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "passed" not in out.splitlines()[-1], out.splitlines()[-1]
    assert "not started: every check stops at the stub" in out
    assert "exercises/model.py: `build_model` is not written yet" in out
    assert "and 7 more checks fail for the same reason" in out, "one cause, one message"
    assert "Next: 3. model" in out


def test_plain_pytest_checks_the_pristine_stubs_whatever_exercises_holds(tmp_path):
    # A learner's copy (a release: its stubs in .kata/pristine/, no git history) whose exercises/ holds finished
    # work: devices.py the reference, model.py too, its snapshot lost. The project's own run takes the stubs from
    # the snapshot, never from exercises/: the devices stub still fails each check; for the model, none was found,
    # and the header says so. Its first lines say what it checks, and that `pytest exercises` checks the work.
    copy = tmp_path / "copy"
    ignore = shutil.ignore_patterns("__pycache__", "selftest", "benchmarks", ".kata-progress.json")
    for folder in ("tests", "records", "solutions"):
        shutil.copytree(PROJECT_ROOT / folder, copy / folder, ignore=ignore)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(PROJECT_ROOT / name, copy / name)
    if pristine.write_stubs(copy / "exercises"):
        pytest.skip("no pristine copy of the stubs was found (no .kata/pristine/ snapshot, no git history)")
    pristine.write_snapshot(copy / "exercises", copy)
    for name in ("devices", "model"):
        shutil.copy(SOLUTIONS / f"{name}.py", copy / "exercises" / f"{name}.py")
    (copy / pristine.SNAPSHOT_DIR / "model.py").unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KATA_"))}
    env.update(KATA_HOME=str(copy), PYTHONPATH=str(Path(pristine.__file__).resolve().parents[1]), KATA_LANG="en")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                          "tests/test_devices.py::test_pick_device_prefers_cuda_then_mps_then_cpu",
                          "tests/test_model.py::test_build_model_returns_an_nn_sequential"],
                         cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    header = out.splitlines()[2:5]
    assert header[:2] == [
        "kata: project self-check: solutions/ must pass every check, the pristine stubs must fail each",
        "kata: your work in exercises/ is not checked here: `pytest exercises` checks it"], out
    assert header[2].startswith("kata: no pristine stub of model (no .kata/pristine/ snapshot, no git history)"), out
    assert re.search(r"^PASSED tests/test_model.py::test_build_model_returns_an_nn_sequential\[solutions\]$", out, re.M)
    assert "test_build_model_returns_an_nn_sequential[stubs]" not in out, "no stub of the model: left out"
    assert len(re.findall(r"^XFAIL tests/test_devices.py::\S+\[stubs-", out, re.M)) == 4, out
    assert len(re.findall(r"^PASSED tests/test_devices.py::\S+\[solutions-", out, re.M)) == 4, out
