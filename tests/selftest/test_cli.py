"""The `kata` command (run in-process through kata.commands.main)."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from kata import commands, curriculum, pristine, progress
from kata.celeba import CelebA
from kata.project import locate


def test_kata_list_shows_the_exercises_in_order(capsys):
    assert commands.main(["list"]) == 0
    out = capsys.readouterr().out
    positions = [out.index(f". {name} ") for name in curriculum.names()]
    assert positions == sorted(positions)
    assert "pytest exercises" in out


# --- kata hint -------------------------------------------------------------------


def first_line(text):
    return text.strip().splitlines()[0]


def test_kata_hint_shows_level_1_of_every_topic_and_how_to_get_more(capsys):
    assert commands.main(["hint", "data"]) == 0
    out = capsys.readouterr().out
    ex = curriculum.get("data")
    assert out.startswith(f"{ex.label}: {ex.title}") and "Hint 1 of 3: the concept" in out
    for topic in ex.hint_topics:
        assert first_line(ex.hint_levels(topic)[0]) in out, topic or "*"
        assert first_line(ex.hint_levels(topic)[1]) not in out, topic or "*"
    assert "kata hint data --more" in out and "kata hint data FUNCTION" in out


@pytest.mark.parametrize("more, level", [([], 1), (["--more"], 2), (["-m", "-m"], 3), (["--level", "2"], 2),
                                         (["-l", "3"], 3)])
def test_kata_hint_for_one_function_goes_one_level_further_with_each_more(capsys, more, level):
    assert commands.main(["hint", "devices", "to_device", *more]) == 0
    out = capsys.readouterr().out
    levels = curriculum.get("devices").hint_levels("to_device")
    assert f"Hint {level} of 3: {curriculum.HINT_LEVELS[level - 1]}, for `to_device`" in out
    for n, text in enumerate(levels, 1):
        assert (first_line(text) in out) == (n == level), f"level {n} shown for --level {level}"
    assert first_line(curriculum.get("devices").hint_levels("host_copy")[0]) not in out, "another function's hint"
    if level == 2:
        assert "https://pytorch.org/docs/stable/" in out
    if level < 3:
        assert "kata hint devices to_device" + " --more" * level in out, "the command for the next level"
    else:
        assert "last level" in out and "kata solution devices" in out


def test_kata_hint_past_the_last_level_shows_the_last(capsys):
    assert commands.main(["hint", "sync", "--level", "9"]) == 0
    out = capsys.readouterr().out
    assert "only 3 levels" in out
    assert first_line(curriculum.get("sync").hint_levels("train_epoch")[2]) in out


def test_kata_hint_refuses_unknown_exercises_and_functions(capsys):
    assert commands.main(["hint", "nonsense"]) == 2
    assert "no exercise 'nonsense'; the exercises are: devices, data, model" in capsys.readouterr().err
    assert commands.main(["hint", "devices", "to_gpu"]) == 2
    err = capsys.readouterr().err
    assert "no hints for 'to_gpu'" in err and "pick_device, device_of, to_device, to_python, host_copy" in err


def test_kata_hint_takes_more_or_level_not_both(capsys):
    with pytest.raises(SystemExit) as info:
        commands.main(["hint", "devices", "--more", "--level", "2"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        commands.main(["hint", "devices", "--level", "0"])
    assert "levels count from 1" in capsys.readouterr().err


# --- kata solution -----------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout with the model exercise's stub and reference, which `kata solution` works on."""
    from kata.commands import solution
    from kata.project import Project

    root = tmp_path / "kata"
    project = Project(root)
    for folder in ("tests", "exercises", "solutions"):
        (root / folder).mkdir(parents=True)
    (root / "tests" / "conftest.py").write_text("")
    stub = pristine.stub_source("model")
    if stub is None:
        pytest.skip("no pristine stub of model (no .kata/pristine/ snapshot, no git history)")
    (project.exercises / "model.py").write_text(stub)
    shutil.copy(locate().solutions / "model.py", project.solutions / "model.py")
    monkeypatch.setattr(solution, "locate", lambda: project)
    return project


def edited(project, seconds_ago):
    """Give exercises/model.py an edit time `seconds_ago` seconds ago (negative: in the future)."""
    when = time.time() - seconds_ago
    os.utime(project.exercises / "model.py", (when, when))


def fake_checks(monkeypatch, project, counts):
    """Let `kata solution`'s run of the checks record `counts` ({exercise: (passed, total)}) at once."""
    from kata.commands import solution

    calls = []

    def run(argv, **kwargs):
        calls.append((argv, kwargs))
        if counts:
            progress.record(project.exercises, counts)
        return subprocess.CompletedProcess(argv, 1, "", "")

    monkeypatch.setattr(solution.subprocess, "run", run)
    return calls


REFERENCE_LINE = "def build_model() -> nn.Sequential:"


def test_kata_solution_refuses_unknown_names(capsys):
    assert commands.main(["solution", "nonsense"]) == 2
    assert "no exercise 'nonsense'; the exercises are: devices, data, model" in capsys.readouterr().err


def test_kata_solution_in_a_student_release_says_it_has_none(checkout, capsys):
    shutil.rmtree(checkout.solutions)
    assert commands.main(["solution", "model"]) == 1
    assert "no reference solutions" in capsys.readouterr().err


def test_kata_solution_shows_it_when_a_fresh_record_says_done(checkout, monkeypatch, capsys):
    edited(checkout, seconds_ago=100)
    progress.record(checkout.exercises, {"model": (8, 8)})
    calls = fake_checks(monkeypatch, checkout, {})
    assert commands.main(["solution", "model"]) == 0
    out = capsys.readouterr().out
    assert "passes all 8 of its checks" in out and REFERENCE_LINE in out
    assert not calls, "a record younger than every edit is trusted: no need to run the checks"


def test_kata_solution_runs_the_checks_when_the_file_changed_since_the_record(checkout, monkeypatch, capsys):
    progress.record(checkout.exercises, {"model": (8, 8)})  # a stale "done"
    edited(checkout, seconds_ago=-100)
    calls = fake_checks(monkeypatch, checkout, {"model": (3, 8)})
    assert commands.main(["solution", "model"]) == 1
    out = capsys.readouterr().out
    (argv, kwargs), = calls
    assert argv[1:4] == ["-m", "pytest", "exercises/model.py"] and kwargs["cwd"] == checkout.root
    assert "5 of the 8 checks" in out and "still fail" in out and "checked just now" in out
    assert "kata solution model --give-up" in out and "kata hint model" in out
    assert REFERENCE_LINE not in out


def test_kata_solution_checks_that_record_nothing_are_an_error(checkout, monkeypatch, capsys):
    fake_checks(monkeypatch, checkout, {})
    assert commands.main(["solution", "model"]) == 1
    assert "could not tell whether exercises/model.py passes" in capsys.readouterr().err


def test_kata_solution_give_up_shows_it_and_records_that_it_was_viewed(checkout, monkeypatch, capsys):
    progress.record(checkout.exercises, {"model": (2, 8)})
    edited(checkout, seconds_ago=100)
    calls = fake_checks(monkeypatch, checkout, {})
    assert commands.main(["solution", "model", "--give-up"]) == 0
    out = capsys.readouterr().out
    assert "6 of its 8 checks still fail" in out and REFERENCE_LINE in out and not calls
    assert progress.read(checkout.exercises)["model"].solution_viewed
    assert commands.main(["solution", "model"]) == 0, "once viewed, it is shown again without --give-up"
    assert "viewed its solution before" in capsys.readouterr().out


def test_kata_solution_runs_the_real_checks(tmp_path, monkeypatch, capsys):
    """A copy of the project whose exercises/model.py is the reference: its checks pass, so it is shown."""
    from kata.commands import solution
    from kata.project import Project

    root = tmp_path / "kata"
    here = locate()
    ignore = shutil.ignore_patterns("__pycache__", "selftest", "benchmarks", ".kata-progress.json")
    for folder in ("tests", "records", "exercises", "solutions"):
        shutil.copytree(here.root / folder, root / folder, ignore=ignore)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(here.root / name, root / name)
    shutil.copy(here.solutions / "model.py", root / "exercises" / "model.py")
    project = Project(root)
    monkeypatch.setattr(solution, "locate", lambda: project)
    assert commands.main(["solution", "model"]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "Running the checks of exercises/model.py" in out and "passes all" in out and REFERENCE_LINE in out
    assert progress.read(project.exercises)["model"].done


def test_kata_data_draws_a_set_that_loads(tmp_path, capsys):
    root = tmp_path / "d"
    assert commands.main(["data", "--root", str(root), "--train", "6", "--valid", "2", "--test", "2",
                     "--workers", "1"]) == 0
    assert "10 images" in capsys.readouterr().out
    assert [len(CelebA(root, split=s)) for s in ("train", "valid", "test")] == [6, 2, 2]


def test_kata_data_uses_KATA_DATA_by_default(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KATA_DATA", str(tmp_path / "cache"))
    assert commands.main(["data", "--train", "2", "--valid", "1", "--test", "1", "--workers", "1"]) == 0
    assert (tmp_path / "cache" / "celeba" / "list_attr_celeba.txt").is_file()


@pytest.mark.parametrize("bad", [["--train", "-5"], ["--valid", "many"]])
def test_kata_data_rejects_bad_counts(bad, capsys):
    with pytest.raises(SystemExit) as info:
        commands.main(["data", *bad])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "negative" in err or "whole number" in err


def test_every_command_has_the_same_shape():
    for name in commands.COMMANDS:
        module = __import__(f"kata.commands.{name}", fromlist=["run"])
        assert isinstance(module.HELP, str) and module.HELP, f"kata.commands.{name} needs a one-line HELP"
        assert callable(module.add_parser) and callable(module.run), f"kata.commands.{name}: add_parser and run"


def test_python_m_kata_runs_the_command():
    run = subprocess.run([sys.executable, "-m", "kata", "list"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "1. devices" in run.stdout, run.stdout + run.stderr
