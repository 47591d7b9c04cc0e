"""``kata lang LANG``: switch a learner's copy to a language, keeping their code (issue #21).

Each exercise's module, ``exercises/NAME.py``, has its stub's texts (its docstrings,
its comments, its ``NotImplementedError`` messages: :func:`kata.i18n.stub_texts`)
rewritten in LANG by :func:`kata.i18n.translate_stub`: a text the stubs' catalogue
holds becomes its LANG version, and every other character of the file (the
learner's code, their own comments and docstrings) stays as it was. Each file is
written whole or not at all (:func:`kata.files.atomic_write`), with its own mode; a
file that does not parse is left alone, and named. ``kata lang en`` turns the
Korean texts back into the English ones, byte for byte.

The choice goes into the checkout's ``.kata-lang`` (:data:`kata.i18n.LANG_FILE`,
ignored by git as the progress record is), which the checks, the hints and the
``kata`` command read from then on (unless ``KATA_LANG`` or ``--lang`` says
otherwise): ``pytest exercises`` speaks LANG.
"""

from __future__ import annotations

import ast
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kata import curriculum, i18n
from kata.files import atomic_write
from kata.i18n import LANG_FILE, LANGUAGES, N_, _, translate_stub
from kata.i18n.particles import fill
from kata.project import locate

__all__ = ["HELP", "LANGUAGE_NAMES", "Switched", "add_parser", "run", "switch"]

HELP = N_("switch your copy (stubs, messages, hints) to a language: en or ko; your code is kept")

LANGUAGE_NAMES = {"en": N_("English"), "ko": N_("Korean")}


@dataclass
class Switched:
    """What :func:`switch` did, each list as paths relative to the checkout."""

    rewritten: list[str] = field(default_factory=list)   # their texts are in the language now
    unchanged: list[str] = field(default_factory=list)   # nothing to rewrite (already in it, or no stub text)
    unparsed: list[str] = field(default_factory=list)    # left alone: the file does not parse (or can't be read)
    missing: list[str] = field(default_factory=list)     # the checkout has no such module


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def switch(root: str | Path, lang: str) -> Switched:
    """Rewrite the stub texts of every exercise module of the checkout at ``root`` in ``lang``
    and record the choice in ``root/.kata-lang``; the learners' code is kept."""
    i18n.known(lang)
    root = Path(root)
    done = Switched()
    for ex in curriculum.exercises():
        path = root / "exercises" / f"{ex.name}.py"
        shown = path.relative_to(root).as_posix()
        try:
            source = path.read_bytes().decode("utf-8")   # as it is: no newline translation
        except FileNotFoundError:
            done.missing.append(shown)
            continue
        except (OSError, UnicodeDecodeError):
            done.unparsed.append(shown)
            continue
        if not _parses(source):
            done.unparsed.append(shown)
            continue
        translated = translate_stub(source, lang)
        if translated == source:
            done.unchanged.append(shown)
        elif not _parses(translated):   # never with the catalogue's texts; a file left whole rather than broken
            done.unparsed.append(shown)
        else:
            atomic_write(path, translated.encode("utf-8"), mode=stat.S_IMODE(path.stat().st_mode))
            done.rewritten.append(shown)
    atomic_write(root / LANG_FILE, lang + "\n")
    i18n.reread_copy_choice()   # this process reads the new choice too
    return done


def add_parser(sub):
    p = sub.add_parser("lang", help=_(HELP),
                       description=_("Switch your copy to a language: the texts of the stubs in exercises/ "
                                     "(their docstrings, comments and messages) are rewritten in it, your code "
                                     "is kept as it is, and the choice is written to .kata-lang, so that "
                                     "`pytest exercises`, the hints and the kata command speak it too."))
    p.add_argument("language", choices=LANGUAGES, help=_("en (English) or ko (Korean)"))
    return p


def run(args) -> int:
    lang = args.language
    root = locate().root
    done = switch(root, lang)
    # Said in the language chosen (or the one --lang asks for).
    speak = i18n.translation(getattr(args, "lang", None) or lang).gettext

    def say_(template: str, **values) -> str:
        return fill(speak(template), **values)

    language = speak(LANGUAGE_NAMES[lang])
    for shown in done.rewritten:
        print(say_(N_("  {file}: rewritten in {language} (your code kept as it was)"), file=shown,
                   language=language))
    for shown in done.unchanged:
        print(say_(N_("  {file}: nothing to rewrite (already in {language})"), file=shown, language=language))
    for shown in done.missing:
        print(say_(N_("  {file}: not there (`kata reset {name}` brings its stub back)"), file=shown,
                   name=Path(shown).stem))
    for shown in done.unparsed:
        print(say_(N_("  {file}: left as it is: it does not parse; fix it, then run `kata lang {lang}` again"),
                   file=shown, lang=lang), file=sys.stderr)
    print(say_(N_("Your copy speaks {language} now: {lang_file} says {lang}, so `pytest exercises`, the hints "
                  "and the kata command answer in {language}."), language=language, lang_file=LANG_FILE, lang=lang))
    env = os.environ.get("KATA_LANG", "").strip().lower()
    if env and env != lang and getattr(args, "lang", None) is None:
        print(say_(N_("Note: KATA_LANG={env} is set, and it comes before {lang_file}: unset it for {language}."),
                   env=env, lang_file=LANG_FILE, language=language), file=sys.stderr)
    return 1 if done.unparsed else 0
