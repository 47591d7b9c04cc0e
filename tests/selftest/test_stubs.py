"""The stubs and the hints make the learner think: they state what, never how.

Each stub in exercises/ specifies every name the curriculum asks of it in a
docstring (what it takes, what it returns, the book's and the kata's decisions,
the concept it is about), says how to check it, and raises a neutral
NotImplementedError that says only which function is not written yet and where
to look. Neither a stub nor any level of the curriculum's hints may contain an
answer key: an expression of the reference solution that gives the answer away
(kept per exercise in answer_keys.toml, next to this file). Both languages:
the Korean stubs (`kata lang ko`, `kata release --lang ko`: kata.i18n.translate_stub)
and the Korean hints (kata/locale/ko) are held to the same answer keys.

The stubs are read as source (ast), never imported: these checks need no torch.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from kata import curriculum, i18n, pristine
from kata.project import locate

PROJECT = locate()
EXERCISES = curriculum.exercises()
NAMES = [ex.name for ex in EXERCISES]
KEYS_FILE = Path(__file__).with_name("answer_keys.toml")
LANGS = ("en", "ko")   # the stubs and hints as a learner may read them

# The one form of a stub's `raise NotImplementedError(...)` message.
NEUTRAL = re.compile(r"`(?P<function>\w+(?:\.\w+)?)` is not written yet: see (?:its|the class's) docstring, "
                     r"and `kata hint (?P<exercise>\w+)(?: (?P<topic>\w+))?`")
NEUTRAL_EXAMPLE = "`to_device` is not written yet: see its docstring, and `kata hint devices to_device`"

# A specification of reasonable length: long enough to state the decisions, short enough to read.
DOC_MIN, DOC_MAX = 200, 3000


# --- reading the stubs ------------------------------------------------------------


@dataclass(frozen=True)
class Raise:
    where: str            # the enclosing function's qualified name: "to_device", "LivePlot.update"
    line: int
    message: str | None   # None: not one string literal


def source(name: str) -> str:
    """The pristine stub: exercises/NAME.py while it is one; in a learner's copy where it holds
    their work, the stub as it was (kata.pristine), or the check is skipped, saying why."""
    path = PROJECT.exercises / f"{name}.py"
    if pristine.is_stub(path):
        return path.read_text()
    text = pristine.pristine_source(name)
    if text is None:
        pytest.skip(f"exercises/{name}.py holds your work and no pristine copy of the stub was found "
                    "(no .kata/pristine/ snapshot, no git history)")
    return text


def source_in(name: str, lang: str) -> str:
    """The pristine stub with its texts in ``lang`` (as `kata lang` and `kata release --lang` write it)."""
    return source(name) if lang == "en" else i18n.translate_stub(source(name), lang)


def tree(name: str, lang: str = "en") -> ast.Module:
    return ast.parse(source_in(name, lang), filename=f"exercises/{name}.py ({lang})")


def hints_in(ex: curriculum.Exercise, lang: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The exercise's hints as `kata hint` shows them in ``lang`` (whatever language this process speaks)."""
    text = i18n.translation(lang).gettext
    return tuple((topic, tuple(text(level).strip() for level in levels)) for topic, levels in ex.hints_en)


def definitions(module: ast.Module) -> dict[str, ast.AST]:
    """The module's top-level functions, classes and assigned names."""
    found: dict[str, ast.AST] = {}
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    found[target.id] = node
    return found


def raises(module: ast.Module) -> list[Raise]:
    """Every `raise NotImplementedError(...)` of the module, with the function it is in."""
    found = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, (*scope, child.name))
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc
                called = exc.func if isinstance(exc, ast.Call) else exc
                if isinstance(called, ast.Name) and called.id == "NotImplementedError":
                    args = exc.args if isinstance(exc, ast.Call) else []
                    message = (args[0].value if len(args) == 1 and isinstance(args[0], ast.Constant)
                               and isinstance(args[0].value, str) else None)
                    found.append(Raise(".".join(scope), child.lineno, message))
            visit(child, scope)

    visit(module, ())
    return found


def callables(name: str) -> list[str]:
    """The curriculum's names for exercise `name` that the stub defines as functions or classes."""
    defs = definitions(tree(name))
    ex = curriculum.get(name)
    return [n for n in ex.names if isinstance(defs.get(n), (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


# --- answer keys ------------------------------------------------------------------


def answer_keys() -> dict:
    with open(KEYS_FILE, "rb") as f:
        return tomllib.load(f)


def keys_of(name: str) -> dict[str, str]:
    """{expression: what it gives away}, the reference's own keys and the other spellings."""
    entry = answer_keys().get(name, {})
    return {**entry.get("keys", {}), **entry.get("also", {})}


def toml_key(topic: str) -> str:
    """The hint topic as kata/curriculum.toml spells it: hints.to_device, hints."*"."""
    return f"hints.{topic}" if topic else 'hints."*"'


def normal(text: str) -> str:
    """Code spelled one way: whitespace runs as one space, none around `=`, after `,`, `(` and `[`, before
    `)`, `]` and `.` (a chain broken over lines). A space before `(` stays: prose says "add_module (the ...)"."""
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r" ?= ?", "=", text)
    text = re.sub(r"([,(\[]) ", r"\1", text)
    return re.sub(r" ([)\].])", r"\1", text)


# A word ends where a letter, digit or _ of code does: Korean written right after a key ("31개",
# "`copy`를") does not hide it, as Python's \w (which counts Hangul as letters) would.
NOT_CODE_BEFORE, NOT_CODE_AFTER = r"(?<![A-Za-z0-9_])", r"(?![A-Za-z0-9_])"


def contains(text: str, key: str) -> bool:
    """Whether `text` holds the answer key, spelled as in :func:`normal`; a one-word key only as a whole word."""
    if re.fullmatch(r"\w+", key):
        return re.search(rf"{NOT_CODE_BEFORE}{re.escape(key)}{NOT_CODE_AFTER}", text) is not None
    return normal(key) in normal(text)


def texts_shown_to_the_learner(name: str, lang: str = "en") -> list[tuple[str, str]]:
    """(where, text) for the stub, its `raise` messages and every level of the exercise's hints, in ``lang``."""
    ex = curriculum.get(name)
    file = f"exercises/{name}.py" + (f" in {lang} (`kata lang {lang}`)" if lang != "en" else "")
    catalogue = f", its {lang} entry in kata/locale/{lang}/LC_MESSAGES/exercise-{name}.po" if lang != "en" else ""
    shown = [(file, source_in(name, lang))]
    shown += [(f"the `raise` message in {r.where} ({file} line {r.line})", r.message)
              for r in raises(tree(name, lang)) if r.message]
    for topic, levels in hints_in(ex, lang):
        for number, text in enumerate(levels, 1):
            shown.append((f"hint level {number} of `kata hint {name}{' ' + topic if topic else ''}` "
                          f"(kata/curriculum.toml, {toml_key(topic)}{catalogue})", text))
    return shown


# --- the checks ---------------------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", NAMES)
def test_every_stub_says_how_to_check_it(name, lang):
    doc = ast.get_docstring(tree(name, lang)) or ""
    assert f"pytest exercises/{name}.py" in doc, (
        f"exercises/{name}.py's module docstring ({lang}) must say how to check just this file: "
        f"\"Run `pytest exercises/{name}.py` to check just this file.\"")


@pytest.mark.parametrize("name", NAMES)
def test_every_name_of_the_curriculum_is_specified(name):
    ex = curriculum.get(name)
    defs = definitions(tree(name))
    lines = source(name).splitlines()
    for attr in ex.names:
        node = defs.get(attr)
        assert node is not None, f"exercises/{name}.py does not define {attr}, one of the curriculum's names"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node) or ""
            assert DOC_MIN <= len(doc) <= DOC_MAX, (
                f"exercises/{name}.py: {attr}'s docstring has {len(doc)} characters; a specification of "
                f"{DOC_MIN} to {DOC_MAX}: what it takes and returns, the decisions the checks hold the learner "
                "to, and the concept it is about")
            assert "Concept:" in doc, (
                f"exercises/{name}.py: {attr}'s docstring should end with the concept it is about "
                "(\"Concept: ...\")")
        else:  # a constant: a comment right above it says what it is
            above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            assert above.startswith("#") and len(above) > 20, (
                f"exercises/{name}.py: the constant {attr} needs a comment right above it that says what it "
                "holds (not its value)")


@pytest.mark.parametrize("name", NAMES)
def test_every_raise_is_a_neutral_pointer(name):
    ex = curriculum.get(name)
    found = raises(tree(name))
    raised_in = {r.where.split(".")[0] for r in found}
    missing = [attr for attr in callables(name) if attr not in raised_in]
    assert not missing, (
        f"exercises/{name}.py: {', '.join(missing)} raise no NotImplementedError; each stub of the curriculum's "
        "names raises one, so that every check fails on the untouched stub")
    for r in found:
        where = f"exercises/{name}.py line {r.line}, in {r.where or 'the module'}"
        assert r.message is not None, f"{where}: raise NotImplementedError with one string literal"
        match = NEUTRAL.fullmatch(r.message)
        assert match, (
            f"{where}: the message {r.message!r} is not a neutral pointer. It says only which function is not "
            f"written yet and where to look, in this form:\n  {NEUTRAL_EXAMPLE!r}")
        assert match["function"] in (r.where, r.where.split(".")[0]), (
            f"{where}: the message names `{match['function']}`, but it is raised in {r.where}")
        assert match["exercise"] == name, f"{where}: the message points to `kata hint {match['exercise']}`"
        topic = match["topic"]
        assert topic is None or topic in ex.hint_topics, (
            f"{where}: the message points to `kata hint {name} {topic}`, but {name} has no hints for {topic!r} "
            f"(its topics: {', '.join(t or '*' for t in ex.hint_topics)})")


@pytest.mark.parametrize("name", NAMES)
def test_a_translated_raise_still_names_its_function_and_its_hint(name):
    # The Korean pointer is the English one's: the same function, the same `kata hint` command.
    english, korean = raises(tree(name)), raises(tree(name, "ko"))
    assert [r.where for r in korean] == [r.where for r in english], f"exercises/{name}.py in ko: raises moved"
    for en, ko in zip(english, korean):
        match = NEUTRAL.fullmatch(en.message or "")
        if match is None:
            continue   # test_every_raise_is_a_neutral_pointer says why
        command = re.search(r"`kata hint [^`]+`", en.message)[0]
        assert f"`{match['function']}`" in ko.message and command in ko.message, (
            f"exercises/{name}.py in ko, line {ko.line}: the message {ko.message!r} must name "
            f"`{match['function']}` and {command}, as the English does")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", NAMES)
def test_no_stub_raise_message_or_hint_gives_the_answer_away(name, lang):
    keys = keys_of(name)
    assert keys, f"{KEYS_FILE.name} has no answer keys for {name}: list a few [{name}.keys]"
    found = [f"  {where} contains `{key}` ({why})"
             for where, text in texts_shown_to_the_learner(name, lang) for key, why in keys.items()
             if contains(text, key)]
    assert not found, (
        "an answer key is shown to the learner; a stub states what (not how), a hint asks, points to the "
        "documentation (name an API without the call: Tensor.item) and sketches the shape of the code:\n"
        + "\n".join(found))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", NAMES)
def test_no_levels_of_the_hints_together_give_the_answer_away(name, lang):
    # Level 2 names the APIs, level 3 the shape of the code: read together (a learner reads them all),
    # they must not spell out the answer, as the sync hints' stack-then-tolist once did.
    ex = curriculum.get(name)
    hints = "\n".join(text for _, levels in hints_in(ex, lang) for text in levels)
    found = [f"  {why}: {', '.join(repr(w) for w in words)}"
             for why, words in answer_keys().get(name, {}).get("together", {}).items()
             if all(re.search(rf"{NOT_CODE_BEFORE}{re.escape(w)}", hints) for w in words)]
    assert not found, (
        f"the hints of {name} ({lang}), read together, give the answer away: each word may appear, but not all of "
        "these in one exercise's hints (kata/curriculum.toml"
        + (f", kata/locale/{lang}/LC_MESSAGES/exercise-{name}.po" if lang != "en" else "") + "):\n" + "\n".join(found))


@pytest.mark.parametrize("name", NAMES)
def test_answer_keys_come_from_the_reference_solution(name):
    if not PROJECT.has_solutions:
        pytest.skip("a student release has no solutions/")
    reference = (PROJECT.solutions / f"{name}.py").read_text()
    keys = answer_keys().get(name, {}).get("keys", {})
    assert len(keys) >= 3, f"{KEYS_FILE.name}: give {name} at least three [{name}.keys]"
    stray = [key for key in keys if not contains(reference, key)]
    assert not stray, (
        f"{KEYS_FILE.name}: [{name}.keys] {stray} do not occur in solutions/{name}.py; a key is an expression "
        f"of the reference solution (other spellings go in [{name}.also])")


def test_answer_keys_name_only_exercises():
    unknown = set(answer_keys()) - set(NAMES)
    assert not unknown, f"{KEYS_FILE.name} has keys for {sorted(unknown)}, which are not exercises"


@pytest.mark.parametrize("name", NAMES)
def test_hints_go_from_the_concept_to_the_apis_to_the_shape(name):
    ex = curriculum.get(name)
    for topic, levels in ex.hints:
        label = f"{toml_key(topic)} of {name}"
        assert len(levels) == len(curriculum.HINT_LEVELS), (
            f"{label} has {len(levels)} levels; each topic has {len(curriculum.HINT_LEVELS)}: "
            + ", ".join(curriculum.HINT_LEVELS))
        assert "https://" in levels[1], f"{label}: level 2 names the APIs involved, with links to their documentation"
    own = callables(name)
    if len(own) > 1:
        without = [attr for attr in own if attr not in ex.hint_topics]
        assert not without, (
            f"{name} has several functions, so each has hints of its own; {without} have none "
            f"(hints.{without[0]} = [...] in kata/curriculum.toml)")


def test_answer_keys_match_any_spacing_of_the_code_and_whole_words():
    assert contains("    x=x.to( device )", "x = x.to(")
    assert contains("return t.detach()\n        .to('cpu',copy = True)", ".detach().to('cpu', copy=True)")
    assert contains("torch.zeros(( ), device = device)", "torch.zeros((), device=device)")
    assert not contains("Module.add_module (the book names each layer)", "add_module(")
    assert contains("SMILING = 31  # Smiling", "31")
    assert not contains("in 2031, 131 images", "31")
    assert contains("인덱스는 31입니다", "31") and contains("`stack`과 `tolist`", "tolist"), "Korean around a key"
    assert not contains("Tensor.item: https://pytorch.org/docs/stable/generated/torch.Tensor.item.html", ".item()")
