"""The curriculum: one typed index of the exercises, validated, and what the pages take from it (the READMEs'
tables, CONTRACT.md's sections). A new exercise added to a copy of the kata: test_new_exercise.py."""

import re
import textwrap

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


@pytest.mark.parametrize("lang, readme", [("en", "README.md"), ("ko", "README.ko.md")])
def test_the_readme_s_table_of_exercises_is_the_curriculum_s(lang, readme):
    text = (locate().root / readme).read_text(encoding="utf-8")
    table = re.search(r"^<!-- exercises\b[^\n]*-->\n\|[^\n]*\n\|[^\n]*\n(.*?)^<!-- /exercises -->", text, re.M | re.S)
    assert table, f"{readme}: its table of exercises (## The exercises) is between <!-- exercises ... --> marks"
    assert table[1].strip().splitlines() == curriculum.table_rows(lang), (
        f"{readme}'s table of exercises lists the curriculum's, in order, each with what it teaches in its language: "
        "`python -m kata.i18n.catalogues compile` writes it")


def test_the_contract_has_a_section_for_each_exercise_in_order_naming_what_it_defines():
    text = (locate().root / "CONTRACT.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert [s.split(".py", 1)[0] for s in sections] == list(curriculum.names()), (
        "CONTRACT.md has a section `## NAME.py` for each exercise, in the curriculum's order")
    for ex, section in zip(curriculum.exercises(), sections):
        missing = [n for n in ex.names if not re.search(rf"`[^`]*\b{n}\b", section)]
        assert not missing, f"CONTRACT.md's section {ex.name}.py does not say what {missing} must be"


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
    assert "needs its stub, its reference and its checks" in message
