"""The curriculum: the one typed index of the exercises (like rustlings' info.toml).

``kata/curriculum.toml`` lists the exercises in order, one ``[[exercise]]``
table each; :func:`exercises` loads it into :class:`Exercise` objects and
validates it, with an error that names the file, the exercise and the field.
Everything that asks "which exercises are there?" or "which exercise is this
check?" asks here: the pytest plugin (markers, fixtures, the table), the
grader, and the ``kata`` command.

An exercise NAME is found by its name: ``exercises/NAME.py`` (the stub),
``solutions/NAME.py`` (the reference), ``tests/test_NAME.py`` (its checks, which
take the learner's module as a fixture named NAME), ``records/NAME.py`` (what
they ask the module) and its entry here; docs/developing.md ("Add an
exercise") lists every file a new one writes.
"""

from __future__ import annotations

import keyword
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePath

from kata.i18n import N_, _, say, translation
from kata.project import Project, ProjectError, locate

__all__ = ["CURRICULUM_FILE", "CurriculumError", "Exercise", "HINT_LEVELS", "exercise_of", "exercises", "get",
           "hint_level_name", "load", "missing_files", "name_width", "names", "parse", "table_rows",
           "UnknownExercise"]

CURRICULUM_FILE = Path(__file__).with_name("curriculum.toml")

# The hint levels, from general to specific (exercism's hints, rustlings' `hint`): English, as
# marked for translation; :func:`hint_level_name` gives one in the kata's language.
HINT_LEVELS = (N_("the concept"), N_("the PyTorch APIs involved"), N_("the shape of the code"))


class CurriculumError(ValueError):
    """The curriculum file is malformed; the message says where and what."""


class UnknownExercise(LookupError):
    """A name that is not an exercise; the message lists the exercises."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


def hint_level_name(level: int) -> str:
    """What hint level ``level`` (1-based) is, in the kata's language: "the concept", ..."""
    return _(HINT_LEVELS[level - 1]) if 1 <= level <= len(HINT_LEVELS) else say("level {level}", level=level)


def _shown(message_id: str) -> str:
    """A text of curriculum.toml as the learner reads it: translated (its message id is the text as the
    catalogues' extractor yields it), then stripped."""
    return _(message_id).strip()


@dataclass(frozen=True)
class Exercise:
    """One ``[[exercise]]`` of the curriculum.

    Its texts are kept in English, as ``curriculum.toml`` has them (the ``*_en`` fields: each is
    the message id of its translation, as ``kata.i18n.catalogues`` extracts it), and read through
    :attr:`title`, :attr:`teaches`, :attr:`hints` and :meth:`hint_levels` in the kata's language,
    translated when they are read: the language may be chosen after the curriculum was loaded."""

    number: int                                   # 1-based, in curriculum order
    name: str                                     # the module: exercises/NAME.py, tests/test_NAME.py
    title_en: str                                 # one line, as curriculum.toml has it
    teaches_en: str                               # one line: what the exercise is about
    points: float                                 # what `kata grade` gives for it, shared among its checks
    names: tuple[str, ...]                        # what the module must define
    hints_en: tuple[tuple[str, tuple[str, ...]], ...]  # (topic, levels) in order; topic "" = the whole exercise

    @property
    def label(self) -> str:
        """``3. model``"""
        return f"{self.number}. {self.name}"

    @property
    def title(self) -> str:
        return _shown(self.title_en)

    @property
    def teaches(self) -> str:
        return _shown(self.teaches_en)

    @property
    def hints(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(topic, levels) in order, each level in the kata's language; topic "" = the whole exercise."""
        return tuple((topic, tuple(_shown(level) for level in levels)) for topic, levels in self.hints_en)

    def hint_levels(self, topic: str = "") -> tuple[str, ...]:
        return tuple(_shown(level) for level in dict(self.hints_en).get(topic, ()))

    @property
    def hint_topics(self) -> tuple[str, ...]:
        return tuple(topic for topic, _levels in self.hints_en)

    def stub(self, project: Project | None = None) -> Path:
        return (project or locate()).exercises / f"{self.name}.py"

    def solution(self, project: Project | None = None) -> Path:
        return (project or locate()).solutions / f"{self.name}.py"

    def checks(self, project: Project | None = None) -> Path:
        return (project or locate()).checks_of(self.name)


def _problem(where: str, text: str) -> str:
    return f"  {where}: {text}"


def _text(entry: dict, key: str, where: str, problems: list[str], required: bool = True) -> str:
    """The entry's text ``key`` as the catalogues' extractor yields it (its message id)."""
    value = entry.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        problems.append(_problem(where, say("`{key}` must be a non-empty string, got {value}",
                                            key=key, value=repr(value))))
        return ""
    return value


def _hints(entry: dict, where: str, problems: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The entry's hints, each level as the catalogues' extractor yields it (its message id)."""
    raw = entry.get("hints")
    if not isinstance(raw, dict) or not raw:
        problems.append(_problem(where, _("`hints` must be a table of topic = [level 1, level 2, ...] "
                                          "(topic: a function the module defines, or \"*\" for the whole "
                                          "exercise), with at least one topic")))
        return ()
    hints = []
    for topic, levels in raw.items():
        if (not isinstance(levels, list) or not levels
                or not all(isinstance(level, str) and level.strip() for level in levels)):
            problems.append(_problem(where, say("hints.{topic} must be a list of non-empty strings, from "
                                                "general to specific ({levels})",
                                                topic=topic, levels=", ".join(_(n) for n in HINT_LEVELS))))
            continue
        hints.append(("" if topic == "*" else topic, tuple(level.strip("\n") for level in levels)))
    return tuple(hints)


def parse(data: dict, source: str = "curriculum.toml") -> tuple[Exercise, ...]:
    """The exercises of a parsed curriculum file; CurriculumError lists every problem."""
    entries = data.get("exercise")
    if not isinstance(entries, list) or not entries:
        raise CurriculumError(say("{source}: no [[exercise]] tables", source=source))
    problems: list[str] = []
    result, seen = [], set()
    for number, entry in enumerate(entries, 1):
        name = entry.get("name") if isinstance(entry, dict) else None
        where = (say("exercise {number} ({name})", number=number, name=repr(name)) if isinstance(name, str)
                 else say("exercise {number}", number=number))
        if not isinstance(entry, dict):
            problems.append(_problem(where, _("must be a table")))
            continue
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            problems.append(_problem(where, say("`name` must be a Python module name, got {name}", name=repr(name))))
            continue
        if name in seen:
            problems.append(_problem(where, say("the name {name} is used twice; each exercise needs its own",
                                                name=repr(name))))
        seen.add(name)
        points = entry.get("points")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or not points > 0:
            problems.append(_problem(where, say("`points` must be a number > 0, got {points}", points=repr(points))))
            points = 0
        defines = entry.get("names")
        if (not isinstance(defines, list) or not defines
                or not all(isinstance(n, str) and n.isidentifier() for n in defines)):
            problems.append(_problem(where, say("`names` must list what the module defines (Python names), "
                                                "got {names}", names=repr(defines))))
            defines = []
        hints = _hints(entry, where, problems)
        for topic, _levels in hints:
            if topic and topic not in defines:
                problems.append(_problem(where, say("hints.{topic}: {name} is not one of its `names`",
                                                    topic=topic, name=repr(topic))))
        result.append(Exercise(
            number=number, name=name, title_en=_text(entry, "title", where, problems),
            teaches_en=_text(entry, "teaches", where, problems), points=float(points),
            names=tuple(defines), hints_en=hints))
    if problems:
        head = (say("{source} has {count} problem:", source=source, count=len(problems)) if len(problems) == 1
                else say("{source} has {count} problems:", source=source, count=len(problems)))
        raise CurriculumError(head + "\n" + "\n".join(problems))
    return tuple(result)


def missing_files(curriculum: tuple[Exercise, ...], project: Project) -> list[str]:
    """The files an exercise needs that the checkout lacks (solutions only where it has solutions/)."""
    missing = []
    for ex in curriculum:
        needed = [ex.stub(project), ex.checks(project)] + ([ex.solution(project)] if project.has_solutions else [])
        missing += ["  " + say("exercise {label}: {path} is missing", label=ex.label,
                               path=path.relative_to(project.root))
                    for path in needed if not path.is_file()]
    return missing


def load(path: Path = CURRICULUM_FILE, project: Project | None = None) -> tuple[Exercise, ...]:
    """Read and validate a curriculum file (and, given a checkout, that each exercise's files exist)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as err:
        raise CurriculumError(say("can't read the curriculum {path}: {reason}", path=path,
                                  reason=err.strerror)) from None
    except tomllib.TOMLDecodeError as err:
        raise CurriculumError(say("{path} is not valid TOML: {error}", path=path, error=err)) from None
    curriculum = parse(data, str(path))
    if project is not None:
        missing = missing_files(curriculum, project)
        if missing:
            raise CurriculumError(
                say("{path}: each exercise here needs its stub, its reference and its checks (exercises/NAME.py, "
                    "solutions/NAME.py, tests/test_NAME.py), and in {root}:", path=path, root=project.root)
                + "\n" + "\n".join(missing))
    return curriculum


@cache
def exercises() -> tuple[Exercise, ...]:
    """The curriculum, in order (loaded once per process, files checked when the checkout is found)."""
    try:
        project = locate()
    except ProjectError:
        project = None
    return load(CURRICULUM_FILE, project)


def names() -> tuple[str, ...]:
    """The exercises' module names, in order: ('devices', 'data', ...)."""
    return tuple(ex.name for ex in exercises())


def name_width() -> int:
    """How wide the tables' column of names is (a run's table, `kata list`): the longest name's, 9 at least."""
    return max([9, *(len(ex.name) for ex in exercises())])


def table_rows(lang: str, curriculum: tuple[Exercise, ...] | None = None) -> list[str]:
    """The rows of the READMEs' table of exercises in ``lang`` (``| 1 | devices | what it teaches |``): written by
    ``python -m kata.i18n.catalogues compile`` between the README's ``<!-- exercises ... -->`` marks."""
    curriculum = exercises() if curriculum is None else curriculum
    text, width = translation(lang).gettext, max([len("exercise"), *(len(ex.name) for ex in curriculum)])
    return [f"| {ex.number} | {ex.name:<{width}} | {text(ex.teaches_en).strip()} |" for ex in curriculum]


def get(name: str) -> Exercise:
    """The exercise called ``name``, or UnknownExercise listing the names."""
    for ex in exercises():
        if ex.name == name:
            return ex
    raise UnknownExercise(say("no exercise {name}; the exercises are: {names}", name=repr(name),
                              names=", ".join(names())))


def exercise_of(check: str | PurePath) -> Exercise | None:
    """The exercise whose checks ``check`` is: a path to ``tests/test_NAME.py``, or a pytest
    node id (``tests/test_NAME.py::test_x[...]``). None for anything else (the harness's
    own tests, benchmarks)."""
    if isinstance(check, str):
        check = PurePath(check.split("::", 1)[0])
    if check.parent.name != "tests" or not check.name.startswith("test_") or check.suffix != ".py":
        return None
    if isinstance(check, Path) and check.is_absolute():
        try:
            if check.parent.resolve() != locate().checks.resolve():
                return None
        except ProjectError:
            return None
    name = check.stem[len("test_"):]
    return next((ex for ex in exercises() if ex.name == name), None)
