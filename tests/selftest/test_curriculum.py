"""The curriculum: one typed index of the exercises, validated, and the four things an exercise is."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib

import pytest

from kata import curriculum
from kata.curriculum import CurriculumError, UnknownExercise
from kata.project import Project, locate

ENTRY = dict(name="demo", title="A demo", teaches="nothing much", points=5, names=["f"],
             hints={"f": ["the concept", "the API", "the shape"]})


def parse(*entries):
    return curriculum.parse({"exercise": [dict(e) for e in entries]}, "test.toml")


def test_the_curriculum_loads_into_typed_exercises_in_order():
    exercises = curriculum.exercises()
    assert [ex.number for ex in exercises] == list(range(1, len(exercises) + 1))
    known = ("devices", "data", "model", "training", "plotting", "sync", "checkpoint")
    assert curriculum.names()[:len(known)] == known, "the exercises so far, in order (more may follow)"
    for ex in exercises:
        assert ex.title and ex.teaches and ex.points > 0 and ex.names and ex.hints, ex.name
        assert ex.stub().is_file() and ex.checks().is_file(), ex.name


def test_an_exercise_is_found_by_name_or_by_its_checks():
    assert curriculum.get("model").label == "3. model"
    assert curriculum.exercise_of("tests/test_data.py::test_x[solutions]").name == "data"
    assert curriculum.exercise_of(locate().checks / "test_sync.py").name == "sync"
    assert curriculum.exercise_of("tests/selftest/test_cli.py::test_x") is None
    assert curriculum.exercise_of("tests/benchmarks/test_epoch_speed.py::test_y") is None
    with pytest.raises(UnknownExercise, match=r"no exercise 'modle'; the exercises are: devices, data, model"):
        curriculum.get("modle")


def test_the_readme_s_table_of_exercises_names_each_one_in_order():
    readme = (locate().root / "README.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (\w+) +\|", readme, flags=re.M)
    assert rows == [(str(ex.number), ex.name) for ex in curriculum.exercises()], (
        "README.md's table of exercises (## The exercises) lists the curriculum's, in order: add a row for "
        "each new exercise, with what it is about")


@pytest.mark.parametrize("change, words", [
    (dict(points=0), "`points` must be a number > 0"),
    (dict(points="ten"), "`points` must be a number > 0"),
    (dict(name="has-dash"), "`name` must be a Python module name"),
    (dict(title=""), "`title` must be a non-empty string"),
    (dict(names=[]), "`names` must list what the module defines"),
    (dict(hints={}), "`hints` must be a table"),
    (dict(hints={"f": []}), "hints.f must be a list of non-empty strings"),
    (dict(hints={"g": ["?"]}), "hints.g: 'g' is not one of its `names`"),
])
def test_a_bad_entry_is_refused_with_where_and_what(change, words):
    with pytest.raises(CurriculumError) as info:
        parse({**ENTRY, **change})
    assert "test.toml" in str(info.value) and "exercise 1" in str(info.value) and words in str(info.value)


def test_a_name_used_twice_is_refused():
    with pytest.raises(CurriculumError, match="the name 'demo' is used twice"):
        parse(ENTRY, ENTRY)


def test_every_problem_is_listed_at_once():
    with pytest.raises(CurriculumError, match="has 2 problems") as info:
        parse({**ENTRY, "points": -1, "title": ""})
    assert "`points`" in str(info.value) and "`title`" in str(info.value)


def test_an_exercise_without_its_files_is_refused(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("")
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "demo.py").write_text("")
    (tmp_path / "solutions").mkdir()
    toml = tmp_path / "curriculum.toml"
    toml.write_text(textwrap.dedent("""
        [[exercise]]
        name = "demo"
        title = "A demo"
        teaches = "nothing much"
        points = 5
        names = ["f"]
        hints.f = ["the concept"]
    """))
    with pytest.raises(CurriculumError) as info:
        curriculum.load(toml, Project(tmp_path))
    message = str(info.value)
    assert "tests/test_demo.py is missing" in message and "solutions/demo.py is missing" in message
    assert "exercises/demo.py" not in message
    assert "four things" in message


# --- one more exercise is exactly four things -------------------------------------
#
# It comes after the curriculum's last: its number is one more than theirs, whatever their count.

EXTRA = len(curriculum.names()) + 1
EXTRA_STUB = f'''"""Exercise {EXTRA} · extra: a demo. Run `pytest exercises/extra.py` to check it."""


def double(x):
    """Return twice `x`."""
    raise NotImplementedError("`double` is not written yet: see its docstring, and `kata hint extra`")
'''
EXTRA_SOLUTION = '''def double(x):
    return 2 * x
'''
EXTRA_CHECKS = '''"""Checks for the extra exercise."""


def test_double_doubles(extra):
    assert extra.double(2) == 4, "double(2) must be 4"


def test_double_of_zero_is_zero(extra):
    assert extra.double(0) == 0, "double(0) must be 0"
'''
EXTRA_ENTRY = '''
[[exercise]]
name = "extra"
title = "An extra exercise"
teaches = "that an exercise is four things"
points = 5
names = ["double"]
hints.double = ["What is twice a number?"]
'''


@pytest.fixture(scope="module")
def extra(tmp_path_factory):
    """A copy of the project with one more exercise added by the four things alone."""
    root = tmp_path_factory.mktemp("extra") / "device-kata"
    project = locate().root
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", "data", "runs")
    for folder in ("kata", "exercises", "solutions", "tests", "records"):
        shutil.copytree(project / folder, root / folder, ignore=ignore)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(project / name, root / name)
    (root / "exercises" / "extra.py").write_text(EXTRA_STUB)
    (root / "solutions" / "extra.py").write_text(EXTRA_SOLUTION)
    (root / "tests" / "test_extra.py").write_text(EXTRA_CHECKS)
    with open(root / "kata" / "curriculum.toml", "a") as f:
        f.write(EXTRA_ENTRY)
    tomllib.loads((root / "kata" / "curriculum.toml").read_text())
    return root


def run_in(root, *command):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KATA_HOME"))}
    env["PYTHONPATH"] = str(root)  # the copy's kata, ahead of the installed one
    return subprocess.run([sys.executable, *command], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_one_more_exercise_is_checked_selected_listed_and_tabled(extra):
    run = run_in(extra, "-m", "pytest", "-p", "no:cacheprovider", "solutions", "-m", "extra")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert re.search(r"2 passed, \d+ deselected", out), out
    assert re.search(rf"{EXTRA}\. extra +2/2 +passed +done", out), out

    run = run_in(extra, "-m", "pytest", "-p", "no:cacheprovider", "exercises/extra.py")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "exercises/extra.py: `double` is not written yet" in out, out
    assert re.search(rf"{EXTRA}\. extra +0/2 +passed +not started", out), out

    run = run_in(extra, "-m", "kata", "list")
    assert run.returncode == 0 and re.search(rf"{EXTRA}\. extra +An extra exercise", run.stdout), \
        run.stdout + run.stderr
