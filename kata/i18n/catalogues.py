"""The translation catalogues, kept with Babel: extract, update, compile, check.

    python -m kata.i18n.catalogues update [DOMAIN ...]   # extract the English, merge into ko/DOMAIN.po
    python -m kata.i18n.catalogues compile [DOMAIN ...]  # ko/DOMAIN.po -> ko/DOMAIN.mo (what the kata reads),
                                                         # and the READMEs' tables of exercises
    python -m kata.i18n.catalogues check [DOMAIN ...]    # what tests/selftest/test_i18n.py fails on

A domain's messages are extracted from the files :func:`kata.i18n.catalogue_files`
names (the areas of :data:`kata.i18n.CATALOGUES`, and ``exercise-NAME`` for each
exercise: its entry of the curriculum, its stub, its records and its checks):
Python with Babel's own extractor (the keywords ``_``, ``N_`` and ``say``); the
curriculum (its titles, lessons and hints: an exercise's catalogue takes its own
entry), the conformance table (its behaviours, in words) and the stubs (their
docstrings, comments and ``NotImplementedError`` messages) with the three
extractors below. The English text is the message id; an entry whose English
changed comes back from ``update`` marked fuzzy, beside its old translation, and
counts as missing until a translator clears the mark. A message that moves to
another domain keeps its translation: ``update`` takes it from every catalogue
of the language, those of a domain that is gone included (delete such a file
once ``update`` has run: ``check`` names it).

``compile`` also writes what the translations make besides the ``.mo`` files: the table of
exercises of README.md and of each README.LANG.md (between ``<!-- exercises ... -->`` and
``<!-- /exercises -->``), from the curriculum's names and lessons in that language
(:func:`kata.curriculum.table_rows`); ``check`` says when one is not what it would write.

Babel is a maintainer's tool (``pip install -e ".[dev]"``): the kata itself
reads only the compiled ``.mo`` files, with the standard library.
"""

from __future__ import annotations

import argparse
import io
import re
import string
import sys
import tomllib
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract as extract_from
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

from kata.i18n import LOCALE_DIR, catalogue_files, exercise_of_catalogue, stub_texts

__all__ = ["compile_catalogue", "extract", "extract_stub", "extract_table", "extract_toml", "main", "problems",
           "readme_tables", "strays", "translations", "update"]

ROOT = Path(__file__).resolve().parents[2]
KEYWORDS = {"_": None, "N_": None, "say": None, "gettext": None}
LANGS = ("ko",)


def extract_toml(fileobj, keywords, comment_tags, options):
    """Babel extractor for kata/curriculum.toml: each exercise's title and lesson, each hint level (only the
    exercise ``options["exercise"]``'s, where given)."""
    data = tomllib.loads(fileobj.read().decode("utf-8"))
    for exercise in data.get("exercise", []):
        name = exercise["name"]
        if (options or {}).get("exercise", name) != name:
            continue
        for key in ("title", "teaches"):
            yield 0, None, exercise[key], [f"{name}: {key}"]
        for topic, levels in exercise.get("hints", {}).items():
            for level, text in enumerate(levels, 1):
                yield 0, None, text.strip("\n"), [f"{name}: hint {topic}, level {level}"]


def extract_table(fileobj, keywords, comment_tags, options):
    """Babel extractor for kata/conformance/table.toml: what each behaviour tries, and why the simulator
    refuses it (the words `kata doctor` shows; CUDA's own texts stay as CUDA prints them)."""
    for row in tomllib.loads(fileobj.read().decode("utf-8")).get("behaviour", []):
        yield 0, None, row["behaviour"], [row["id"]]
        if "why" in row.get("simulator", {}):
            yield 0, None, row["simulator"]["why"], [f"{row['id']}: why the simulator refuses it"]


def extract_stub(fileobj, keywords, comment_tags, options):
    """Babel extractor for exercises/*.py: the texts kata.i18n.stub_texts finds."""
    for first, _last, kind, text in stub_texts(fileobj.read().decode("utf-8")):
        yield first, None, text, [kind]


def _method(path: Path):
    if path.name == "table.toml":
        return extract_table
    if path.suffix == ".toml":
        return extract_toml
    if path.parent.name == "exercises":
        return extract_stub
    return "python"


def _files(domain: str) -> list[Path]:
    return sorted({p for pattern in catalogue_files()[domain] for p in ROOT.glob(pattern)})


def _found(path: Path, options: dict):
    """Babel's messages of the file at ``path``; of a stub (exercises/NAME.py), those of the pristine stub
    (kata.pristine), not of the file as it is: a learner's copy, or a teacher's at work, holds other code there."""
    method = _method(path)
    settings = dict(keywords=KEYWORDS, comment_tags=("Translators:",), options=options, strip_comment_tags=True)
    if method is extract_stub:
        from kata.pristine import stub_source

        source = stub_source(path.stem, ROOT)
        if source is not None:
            return extract_from(method, io.BytesIO(source.encode("utf-8")), **settings)
    return extract_from_file(method, path, **settings)


def extract(domain: str) -> Catalog:
    """The domain's messages, as they are in the source today (a template: no translations)."""
    template = Catalog(project="device-kata", domain=domain, fuzzy=False)
    exercise = exercise_of_catalogue(domain)
    options = {"exercise": exercise} if exercise else {}
    for path in _files(domain):
        for lineno, message, comments, context in _found(path, options):
            if isinstance(message, tuple):     # ngettext: the singular is the id
                message = message[0]
            if message and message.strip():
                template.add(message, locations=[(str(path.relative_to(ROOT)), lineno)],
                             auto_comments=comments, context=context)
    return template


def _po(domain: str, lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{domain}.po"


def _read(path: Path, lang: str) -> Catalog:
    if not path.exists():
        return Catalog(locale=lang, project="device-kata", fuzzy=False)
    with path.open("rb") as f:
        return read_po(f, locale=lang)


def translations(lang: str = "ko") -> dict[str, str]:
    """Every translation ``lang``'s catalogues hold: those of English their sources no longer have too, and those of
    a catalogue whose domain is gone (its messages moved to others)."""
    found = {}
    every, folder = catalogue_files(), LOCALE_DIR / lang / "LC_MESSAGES"
    for domain in [*every, *sorted(p.stem for p in folder.glob("*.po") if p.stem not in every)]:
        catalog = _read(_po(domain, lang), lang)
        for message in [*catalog, *catalog.obsolete.values()]:
            if message.id and message.string and not message.fuzzy:
                found.setdefault(message.id, message.string)
    return found


def update(domain: str, lang: str = "ko", known: dict[str, str] | None = None) -> Path:
    """Merge today's English into ``lang``'s catalogue: new messages empty, changed ones fuzzy, those the source
    no longer has gone; a message that moved here from another domain's files keeps its translation (``known``:
    :func:`translations`, taken before any catalogue is updated)."""
    path = _po(domain, lang)
    known = translations(lang) if known is None else known
    catalog = _read(path, lang)
    catalog.update(extract(domain), update_header_comment=False)
    for message in catalog:
        if message.id and not message.string and message.id in known:
            message.string = known[message.id]
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=100, include_previous=True, sort_by_file=True, ignore_obsolete=True)
    path.write_bytes(buffer.getvalue())
    return path


def compile_catalogue(domain: str, lang: str = "ko") -> Path:
    """``lang``'s catalogue as the kata reads it (fuzzy entries left out)."""
    path = _po(domain, lang)
    buffer = io.BytesIO()
    write_mo(buffer, _read(path, lang), use_fuzzy=False)
    out = path.with_suffix(".mo")
    out.write_bytes(buffer.getvalue())
    return out


def _fields(text: str) -> list[str]:
    try:
        return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)
    except ValueError as err:
        return [f"(not a template: {err})"]


def problems(domain: str, lang: str = "ko") -> list[str]:
    """What is wrong with ``lang``'s catalogue of ``domain``: one line per entry."""
    path = _po(domain, lang)
    if not path.exists():
        return [f"{path.relative_to(ROOT)}: missing (python -m kata.i18n.catalogues update {domain})"]
    catalog = _read(path, lang)
    out = []
    for message in extract(domain):
        if not message.id:
            continue
        where = ", ".join(f"{f}:{n}" for f, n in message.locations[:2])
        entry = catalog.get(message.id, context=message.context)
        short = message.id.splitlines()[0][:70]
        if entry is None or not entry.string:
            out.append(f"{domain}: no {lang} entry for {short!r} ({where})")
        elif entry.fuzzy:
            out.append(f"{domain}: stale {lang} entry (its English changed) for {short!r} ({where})")
        elif _fields(entry.string) != _fields(message.id):
            out.append(f"{domain}: placeholders differ for {short!r} ({where}): English {_fields(message.id)}, "
                       f"{lang} {_fields(entry.string)}")
    for key in catalog.obsolete:
        out.append(f"{domain}: stale {lang} entry for English the source no longer has: {str(key)[:70]!r}")
    mo = path.with_suffix(".mo")
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    if not mo.exists() or mo.read_bytes() != compiled.getvalue():
        out.append(f"{domain}: {mo.relative_to(ROOT)} is not compiled from its .po "
                   f"(python -m kata.i18n.catalogues compile {domain})")
    return out


# A README's table of exercises: its mark, its header and rule, its rows (written by `compile`), its end mark.
TABLE = re.compile(r"^(<!-- exercises\b[^\n]*-->\n\|[^\n]*\n\|[^\n]*\n)(.*?)(^<!-- /exercises -->)", re.M | re.S)


def readme_tables() -> dict[Path, tuple[str, str]]:
    """Each README with a table of exercises: (its text, its text with the curriculum's rows in its language)."""
    from kata import curriculum
    from kata.i18n import translation

    translation.cache_clear()   # the catalogues as compiled now
    exercises = curriculum.load(ROOT / "kata" / "curriculum.toml")
    found = {}
    for lang, path in [("en", ROOT / "README.md"), *((la, ROOT / f"README.{la}.md") for la in LANGS)]:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        rows = "".join(f"{row}\n" for row in curriculum.table_rows(lang, exercises)) + "\n"
        table = TABLE.search(text)
        if table:
            found[path] = (text, text[:table.start()] + table[1] + rows + table[3] + text[table.end():])
    return found


def strays(lang: str = "ko") -> list[str]:
    """The catalogue files of ``lang`` whose domain is gone (an exercise renamed or removed, an area split): one
    line each. ``update`` has carried their translations to the domains that hold their messages now."""
    every, folder = catalogue_files(), LOCALE_DIR / lang / "LC_MESSAGES"
    return [f"{path.relative_to(ROOT)}: no domain is {path.stem!r} any more (its translations go where its messages "
            f"are now with `update`; then delete it)"
            for path in sorted([*folder.glob("*.po"), *folder.glob("*.mo")]) if path.stem not in every]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kata.i18n.catalogues", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("update", "compile", "check"))
    every = catalogue_files()
    parser.add_argument("domains", nargs="*", metavar="DOMAIN", help=f"default: all ({', '.join(every)})")
    args = parser.parse_args(argv)
    domains = args.domains or list(every)
    unknown = [d for d in domains if d not in every]
    if unknown:
        parser.error(f"unknown domain {unknown[0]!r}: one of {', '.join(every)}")
    found, known = [], {lang: translations(lang) for lang in LANGS} if args.action == "update" else {}
    for domain in domains:
        for lang in LANGS:
            if args.action == "update":
                print(update(domain, lang, known[lang]).relative_to(ROOT))
            elif args.action == "compile":
                print(compile_catalogue(domain, lang).relative_to(ROOT))
            else:
                found += problems(domain, lang)
    if args.action == "check" and not args.domains:
        found += [line for lang in LANGS for line in strays(lang)]
    for path, (text, written) in readme_tables().items() if args.action != "update" else ():
        if args.action == "compile" and written != text:
            path.write_text(written, encoding="utf-8")
            print(path.relative_to(ROOT))
        elif args.action == "check" and written != text:
            found.append(f"{path.relative_to(ROOT)}: its table of exercises is not the curriculum's "
                         f"(python -m kata.i18n.catalogues compile)")
    for line in found:
        print(line)
    if args.action == "check":
        print(f"{len(found)} problem(s)" if found else "every catalogue is complete and compiled")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
