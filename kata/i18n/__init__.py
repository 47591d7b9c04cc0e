"""The kata's languages: English, the source, and Korean, from gettext catalogues (issue #21).

Every sentence a learner or teacher reads goes through :func:`_` (or a template
marked with :func:`N_` and filled by :func:`say`), with the English text as the
message id: the English source stays readable, and English is what a run shows
unless Korean is chosen. The translations are gettext catalogues,
``kata/locale/ko/LC_MESSAGES/DOMAIN.po`` (one per area of the kata,
:data:`CATALOGUES`, and one per exercise, ``exercise-NAME``:
:func:`catalogue_files`), compiled to ``.mo`` beside them and read with the
standard library's :mod:`gettext` (every compiled catalogue of the language);
``python -m kata.i18n.catalogues`` extracts, updates and compiles them (with
Babel), and ``tests/selftest/test_i18n.py`` fails on a message without a Korean
entry, a stale one or a placeholder that differs.

The language, first found of:

1. :func:`set_language` (the ``--lang`` option of the ``kata`` commands, which
   also sets ``KATA_LANG`` so the processes they start agree);
2. ``$KATA_LANG`` (``en`` or ``ko``);
3. what ``kata lang ko`` chose for a learner's copy: ``.kata-lang`` at the top
   of the checkout;
4. the locale: ``$LANGUAGE``, ``$LC_ALL``, ``$LC_MESSAGES`` or ``$LANG``
   (``ko_KR.UTF-8`` is Korean), as gettext reads it;
5. English.

Nothing here imports torch: ``kata --help`` and ``kata list`` stay instant.
"""

from __future__ import annotations

import gettext
import json
import os
import unicodedata
from functools import cache
from pathlib import Path

from kata.i18n.particles import fill

__all__ = ["CATALOGUES", "EXERCISE_CATALOGUE", "EXERCISE_FILES", "LANGUAGES", "LANG_FILE",
           "LOCALE_DIR", "N_", "_", "catalogue_files", "chosen_in", "english_of_stub_text", "exercise_of_catalogue",
           "known", "language", "pad", "reread_copy_choice", "say", "set_language", "stub_texts", "translate_stub",
           "translation", "width"]

LANGUAGES = ("en", "ko")
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
LANG_FILE = ".kata-lang"   # `kata lang ko`: a learner's copy in Korean

# One catalogue per area of the kata: the files (globs relative to the checkout)
# whose sentences it holds. Each domain's .po is edited on its own; a message is
# looked up in all of them, so a sentence shared by two areas needs one entry.
CATALOGUES = {
    "lessons": ["kata/checks/*.py", "kata/records/snapshots.py", "kata/records/elsewhere.py", "kata/records/ranks.py",
                "tests/conftest.py", "conftest.py"],
    "harness": ["kata/harness/*.py", "kata/notebook.py", "kata/progress.py", "kata/project.py", "kata/files.py",
                "kata/celeba.py", "kata/data/*.py", "kata/data/synth/*.py", "kata/i18n/__init__.py"],
    "commands": [f"kata/commands/{name}.py" for name in ("__init__", "_args", "_checkpoints", "_histories", "_progress",
                                                         "_ranks_train", "_torchrun", "bench", "data", "doctor",
                                                         "hint", "list", "next", "solution", "train", "watch")]
    + ["kata/conformance/*.py"],
    "grading": ["kata/grading/*.py", "kata/records/__init__.py", "kata/records/wire.py",
                "kata/records/declared.py", "kata/commands/grade.py", "kata/commands/gradescope.py"],
    "hints": ["kata/curriculum.py"],
    "conformance": ["kata/conformance/table.toml"],
    "stubs": ["kata/pristine.py", "kata/commands/release.py", "kata/commands/reset.py", "kata/commands/lang.py"],
    "run": ["kata/asgpu/*.py", "kata/commands/run.py"],
}
# ... and one per exercise NAME of kata/curriculum.toml, found by its name: everything the exercise says, wherever
# it is written (its [[exercise]] entry's texts, its stub's, its records' and its checks'), so that a new
# exercise's Korean is one file of its own, kata/locale/ko/LC_MESSAGES/exercise-NAME.po.
EXERCISE_CATALOGUE = "exercise-{name}"
EXERCISE_FILES = ("kata/curriculum.toml", "exercises/{name}.py", "records/{name}.py", "tests/test_{name}.py")
_CURRICULUM = Path(__file__).resolve().parent.parent / "curriculum.toml"   # kata.curriculum's


def catalogue_files() -> dict[str, list[str]]:
    """Every catalogue and its files: :data:`CATALOGUES`, then ``exercise-NAME`` for each exercise of the curriculum
    (read here as TOML: the curriculum's own module translates with this one), in its order."""
    import tomllib

    entries = tomllib.loads(_CURRICULUM.read_text(encoding="utf-8")).get("exercise", [])
    names = [e["name"] for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)]
    return {**CATALOGUES, **{EXERCISE_CATALOGUE.format(name=name): [f.format(name=name) for f in EXERCISE_FILES]
                             for name in names}}


def exercise_of_catalogue(domain: str) -> str | None:
    """The exercise whose catalogue ``domain`` is (None: a catalogue of an area)."""
    prefix = EXERCISE_CATALOGUE.format(name="")
    return domain.removeprefix(prefix) if domain.startswith(prefix) and domain not in CATALOGUES else None


def _compiled(lang: str, pattern: str = "*") -> list[str]:
    """The domains of ``lang``'s compiled catalogues (``pattern``: a glob of their names), in a fixed order."""
    return sorted(p.stem for p in (LOCALE_DIR / lang / "LC_MESSAGES").glob(f"{pattern}.mo"))


_chosen: str | None = None


def N_(message: str) -> str:
    """Mark a sentence for translation where it is defined (a constant); :func:`say` or
    :func:`_` translates it where it is shown."""
    return message


def known(lang: str) -> str:
    """``lang`` itself, when the kata speaks it; else a ValueError that says which it speaks."""
    if lang not in LANGUAGES:
        raise ValueError(say("unknown language {lang!r}: the kata speaks {languages}", lang=lang,
                             languages=", ".join(LANGUAGES)))
    return lang


def set_language(lang: str | None) -> None:
    """Choose the language for this process and the processes it starts (None: as found)."""
    global _chosen
    _chosen = lang if lang is None else known(lang)
    reread_copy_choice()
    if lang is not None:
        os.environ["KATA_LANG"] = lang


def chosen_in(root: Path | None) -> str | None:
    """The language ``kata lang`` chose for the checkout at ``root`` (None: none chosen)."""
    try:
        text = (root / LANG_FILE).read_text(encoding="utf-8").strip() if root is not None else ""
    except OSError:
        return None
    return text if text in LANGUAGES else None


def _from_locale() -> str | None:
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name)
        if value:
            first = value.split(":")[0].lower()
            return "ko" if first.startswith("ko") else "en" if first not in ("c", "posix") else None
    return None


def _project_root() -> Path | None:
    try:
        from kata.project import locate
        return locate().root
    except Exception:      # no checkout (an installed kata used elsewhere): no copy's choice
        return None


def language() -> str:
    """``en`` or ``ko``: the language the kata speaks now (see the module's docstring)."""
    if _chosen is not None:
        return _chosen
    env = os.environ.get("KATA_LANG", "").strip().lower()
    if env:
        return env if env in LANGUAGES else "en"
    return _copy_choice() or _from_locale() or "en"


@cache
def _copy_choice() -> str | None:
    return chosen_in(_project_root())


def reread_copy_choice() -> None:
    """Read the copy's choice (``.kata-lang``) again on the next :func:`language`: after ``kata lang`` wrote it."""
    _copy_choice.cache_clear()


@cache
def translation(lang: str) -> gettext.NullTranslations:
    """Every compiled catalogue of ``lang``, chained (English: the message ids themselves)."""
    if lang == "en":
        return gettext.NullTranslations()
    chain = gettext.NullTranslations()
    for domain in _compiled(lang):
        found = gettext.translation(domain, LOCALE_DIR, languages=[lang], fallback=True)
        if isinstance(found, gettext.GNUTranslations):
            found.add_fallback(chain)
            chain = found
    return chain


def _(message: str) -> str:
    """``message`` in the kata's language (itself in English, or when it has no entry)."""
    if not message:
        return message
    return translation(language()).gettext(message)


def say(template: str, /, **values) -> str:
    """A template, translated, with its placeholders filled in (and, in Korean, the particle written after a
    placeholder as its pair, ``{file}을(를)``, made the one that fits the value: :mod:`kata.i18n.particles`)."""
    return fill(_(template), **values)


def width(text: str) -> int:
    """The columns ``text`` takes in a terminal: a wide or fullwidth glyph (Korean, say) takes two, a
    combining mark none."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1
               for c in text)


def pad(text: str, columns: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``columns`` terminal columns (``<`` left, ``>`` right), as
    ``f"{text:<{columns}}"`` pads ASCII."""
    spaces = " " * max(0, columns - width(text))
    return spaces + text if align == ">" else text + spaces


# --- a stub's own sentences: its docstrings, its comments, its `raise NotImplementedError("...")` --------------
#
# A stub is translated where it stands: each of these texts is one message (a docstring as
# inspect.cleandoc reads it, a block of comment lines without their "# "), and `kata lang`
# and `kata release --lang` put the translation in its place, keeping every other character
# of the file (the learner's code) as it was.

def stub_texts(source: str) -> list[tuple[int, int, str, str]]:
    """The translatable texts of a module's source: ``(first line, last line, kind, text)``
    (lines 1-based, inclusive), kind ``docstring``, ``comment`` or ``message``, in order."""
    return [span[:4] for span in _spans(source)]


def _spans(source: str) -> list[tuple[int, int, str, str, int, int]]:
    """:func:`stub_texts`, each with the columns its text starts and ends at (a comment: its lines)."""
    import ast
    import inspect
    import tokenize
    from io import StringIO

    found = []
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.append((first.lineno, first.end_lineno, "docstring", inspect.cleandoc(first.value.value),
                              first.col_offset, first.end_col_offset))
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args \
                and isinstance(node.exc.func, ast.Name) and node.exc.func.id == "NotImplementedError":
            arg = node.exc.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((arg.lineno, arg.end_lineno, "message", arg.value, arg.col_offset, arg.end_col_offset))
    block: list[tuple[int, str]] = []
    lines = source.splitlines()
    for tok in tokenize.generate_tokens(StringIO(source).readline):
        if tok.type == tokenize.COMMENT and lines[tok.start[0] - 1].lstrip().startswith("#"):
            if block and block[-1][0] != tok.start[0] - 1:
                found.append(_comment(block))
                block = []
            block.append((tok.start[0], tok.string))
    if block:
        found.append(_comment(block))
    return sorted(found)


def _comment(block) -> tuple[int, int, str, str, int, int]:
    text = "\n".join(line[1:].removeprefix(" ") for _, line in block)
    return block[0][0], block[-1][0], "comment", text, 0, 0


def translate_stub(source: str, lang: str) -> str:
    """``source`` with each of its texts (:func:`stub_texts`) in ``lang``; the code as it was.

    Either way: an English text becomes its Korean entry, a Korean one (an entry's
    translation) its English message id; a text with neither stays."""
    korean = _entries("ko")
    table = korean if lang == "ko" else {v: k for k, v in korean.items()}
    lines = source.splitlines(keepends=True)
    for first, last, kind, text, col, end_col in reversed(_spans(source)):
        new = table.get(text)
        if new is None or new == text:
            continue
        if kind == "comment":
            old = "".join(lines[first - 1:last])
            indent = old[:len(old) - len(old.lstrip())]
            lines[first - 1:last] = ["".join(f"{indent}# {line}".rstrip() + "\n" for line in new.splitlines())]
            continue
        head, tail = lines[first - 1].encode()[:col].decode(), lines[last - 1].encode()[end_col:].decode()  # ast: bytes
        indent = " " * len(head) if not head.strip() else ""
        lines[first - 1:last] = [head + _literal(kind, new, indent) + tail]
    return "".join(lines)


def english_of_stub_text(text: str) -> str:
    """A stub's text in English: itself, or the English of a text ``kata lang`` put in another language."""
    return _english_of().get(text, text)


@cache
def _english_of() -> dict[str, str]:
    """Each other language's stub texts -> their English (:func:`_entries`, reversed)."""
    return {v: k for lang in LANGUAGES if lang != "en" for k, v in _entries(lang).items()}


@cache
def _entries(lang: str) -> dict[str, str]:
    """The stubs' texts of ``lang``, English text -> translation: the exercises' catalogues (each holds its
    stub's texts) and ``stubs`` (the commands that write stubs)."""
    found = {}
    for domain in ["stubs", *_compiled(lang, EXERCISE_CATALOGUE.format(name="*"))]:
        catalogue = gettext.translation(domain, LOCALE_DIR, languages=[lang], fallback=True)
        found |= {k: v for k, v in getattr(catalogue, "_catalog", {}).items() if isinstance(k, str) and k and v}
    return found


def _literal(kind: str, text: str, indent: str) -> str:
    """A text as a Python literal: a docstring at ``indent``, a message as one string."""
    if kind == "message":
        return json.dumps(text, ensure_ascii=False)   # a JSON string is a Python literal
    head, *rest = text.splitlines()
    body = "".join("\n" + (indent + line if line else "") for line in rest)
    return f'"""{head}{body}{chr(10) + indent if rest else ""}"""'
