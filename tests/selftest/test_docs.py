"""The README and the manual in docs/: short for a learner, true, linked, and each fact in one place.

- README.md and README.ko.md are a learner's pages: at most 200 lines each;
- each page of the manual (docs/, and docs/LANG/ in another language) first says whom it is for
  and what they can do after reading it;
- every relative link in them (and in the text cells of notebooks/) resolves: to a file, and after ``#`` to
  one of its headings;
- a language's manual has the English pages it must have (Korean: at least teaching and gpu),
  each with the English page's commands (in any order), and its README starts with `kata lang LANG`;
- a paragraph is written once: no paragraph of prose stands in two pages of one language;
- every `kata` command a page shows is one the kata's parser takes;
- every quoted output (a fenced block after ``<!-- output: NAME -->``) is what the kata prints,
  as far as it is deterministic: versions and timings are masked, and ``(numbers vary)`` after the
  name masks every number. ``(measured ...)`` marks measured figures, which no run reproduces;
- the trust model's list of what rests on the graded process (docs/teaching.md, and each
  translation) names exactly the records that rest on each kind (docs_list.py beside this file).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import docs_list
import pytest
from test_train import seeds_training

from kata import commands, pristine
from kata.project import locate

ROOT = locate().root
DOCS = ROOT / "docs"
READMES = {"en": ROOT / "README.md", "ko": ROOT / "README.ko.md"}
LANGS = {"en": DOCS, **{p.name: p for p in sorted(DOCS.iterdir()) if p.is_dir()}}
MUST_HAVE = {"ko": {"teaching", "gpu"}}
README_LINES = 200
FOR_WHOM = {"en": ("*For:*", "*After reading it*"), "ko": ("*대상:*", "*읽고 나면*")}
SHORTEST_PARAGRAPH = 100   # shorter ones ("See `kata hint`.") may recur


def pages(lang: str | None = None) -> list[Path]:
    langs = [lang] if lang else list(LANGS)
    return [p for la in langs for p in [READMES.get(la)] + sorted(LANGS[la].glob("*.md")) if p and p.is_file()]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", re.M | re.S)


def prose(text: str) -> str:
    """``text`` without its fenced blocks (links and paragraphs in code are not the page's)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LNM")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(path.read_text(encoding="utf-8")), re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


# --- short, and for someone ------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", READMES)
def test_a_readme_is_a_learners_page_of_at_most_200_lines(lang):
    lines = READMES[lang].read_text(encoding="utf-8").count("\n")
    assert lines <= README_LINES, (
        f"{rel(READMES[lang])} has {lines} lines; a learner's page holds at most {README_LINES}: move a section "
        f"whole into the page of docs/ for its reader, and link it")


@pytest.mark.parametrize("page", [p for la in LANGS for p in sorted(LANGS[la].glob("*.md"))], ids=rel)
def test_each_page_of_the_manual_says_first_whom_it_is_for(page):
    lang = next(la for la, folder in LANGS.items() if page.parent == folder)
    first = " ".join(page.read_text(encoding="utf-8").split("\n\n")[1].split())
    who, after = FOR_WHOM[lang]
    assert first.startswith(who) and after in first, (
        f"{rel(page)}: its first paragraph is {first[:80]!r}...; a page starts with whom it is for ({who}) and "
        f"what they can do after reading it ({after})")


@pytest.mark.parametrize("lang", [la for la in LANGS if la != "en"])
def test_a_languages_manual_has_the_pages_it_must_and_their_commands(lang):
    ours = {p.stem for p in LANGS[lang].glob("*.md")}
    missing = MUST_HAVE.get(lang, set()) - ours
    assert not missing, f"docs/{lang}/ lacks {sorted(missing)}: the pages it must have in this language"
    for stem in sorted(ours):
        english = DOCS / f"{stem}.md"
        assert english.is_file(), f"docs/{lang}/{stem}.md has no English page docs/{stem}.md"
        assert sorted(page_commands(LANGS[lang] / f"{stem}.md")) == sorted(page_commands(english)), (
            f"docs/{lang}/{stem}.md shows other commands than docs/{stem}.md: a translation changes the words, "
            f"never a command (update the one that is behind; a page may put its language's section first)")
    own = f"kata lang {lang}"   # a language's README starts by switching the copy, its stubs first, to it
    start = page_commands(READMES[lang], blocks=1)
    assert own in start, (f"{rel(READMES[lang])}: its first commands {start} do not switch the copy to its "
                          f"language (`{own}`): without it the stubs, the specification, stay in English")
    assert [c for c in page_commands(READMES[lang]) if c != own] == page_commands(READMES["en"]), (
        f"{rel(READMES[lang])} shows other commands than README.md (and `{own}`)")


def page_commands(path: Path, blocks: int | None = None) -> list[str]:
    """The shell commands of a page's bash blocks (its first ``blocks`` of them), without their comments."""
    out = []
    found = re.findall(r"^[ \t]*```bash\n(.*?)^[ \t]*```", path.read_text(encoding="utf-8"), re.M | re.S)
    for block in found[:blocks]:
        for line in block.splitlines():
            line = re.sub(r"(^|\s)#\s.*$", "", line).strip()
            if line:
                out.append(line)
    return out


# --- linked, and each fact once --------------------------------------------------------------------------


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(page: Path, text: str) -> list[str]:
    """The relative links of ``text`` (markdown, in ``page``'s folder) to no file, or to no heading of one."""
    broken = []
    for target in LINK.findall(re.sub(r"`[^`\n]*`", "", prose(text))):
        if re.match(r"[a-z]+:", target):
            continue   # https://..., mailto:
        file_part, _, anchor = target.partition("#")
        goal = (page.parent / file_part).resolve() if file_part else page
        if not goal.exists():
            broken.append(f"{target}: no file {file_part}")
        elif anchor and (goal.suffix != ".md" or anchor not in anchors(goal)):
            broken.append(f"{target}: {goal.name} has no heading whose anchor is #{anchor}")
    return broken


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_every_relative_link_resolves(page):
    broken = broken_links(page, page.read_text(encoding="utf-8"))
    assert not broken, f"{rel(page)} links to what is not there:\n  " + "\n  ".join(broken)


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=rel)
def test_every_relative_link_of_a_notebook_resolves(notebook):
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    text = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    broken = broken_links(notebook, text)
    assert not broken, f"{rel(notebook)} links to what is not there:\n  " + "\n  ".join(broken)


def paragraphs(path: Path) -> list[str]:
    out = []
    for chunk in re.split(r"\n\s*\n", prose(path.read_text(encoding="utf-8"))):
        text = " ".join(chunk.split())
        if len(text) >= SHORTEST_PARAGRAPH and not text.startswith(("#", "|", "<!--")):
            out.append(text)
    return out


@pytest.mark.parametrize("lang", LANGS)
def test_a_paragraph_is_written_in_one_page(lang):
    where: dict[str, list[str]] = {}
    for page in pages(lang):
        for text in paragraphs(page):
            where.setdefault(text, []).append(rel(page))
    twice = {text: at for text, at in where.items() if len(at) > 1}
    assert not twice, "one fact, one home: these paragraphs are written more than once (keep one, link it):\n" + \
        "\n".join(f"  {at}: {text[:100]}..." for text, at in twice.items())


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_every_kata_command_shown_is_one_the_kata_takes(page):
    parser = commands.build_parser()
    wrong = []
    for line in page_commands(page):
        for command in re.split(r"&&|;", line):
            words = shlex.split(command.strip().lstrip("!"))
            if words[:1] != ["kata"] or "..." in words:
                continue
            try:
                parser.parse_args(words[1:])
            except SystemExit:
                wrong.append(command.strip())
    assert not wrong, f"{rel(page)} shows kata commands the kata does not take: {wrong}"


# --- quoted outputs ----------------------------------------------------------------------------------------


@dataclass
class Quote:
    page: Path
    name: str
    flags: str
    lines: list[str]

    @property
    def lang(self) -> str:
        return "ko" if self.page.name.endswith(".ko.md") or self.page.parent.name == "ko" else "en"

    def __str__(self) -> str:
        return f"{rel(self.page)}: {self.name}"


MARK = re.compile(r"^<!-- output: ([\w-]+)(?: \(([^)]*)\))? -->\n```\n(.*?)^```", re.M | re.S)


def quotes() -> list[Quote]:
    return [Quote(page, m[1], m[2] or "", m[3].splitlines()) for page in pages()
            for m in MARK.finditer(page.read_text(encoding="utf-8"))]


VERSION = re.compile(r"\d+(?:\.\d+)+(?:\+\w+)?")
SECONDS = re.compile(r"\d+(?:\.\d+)? ?(?:s\b|초)")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def masked(line: str, every_number: bool) -> str:
    line = SECONDS.sub("<s>", VERSION.sub("<v>", line.rstrip()))
    return NUMBER.sub("<n>", line) if every_number else line


def quoted_in(quote: Quote, output: str) -> str | None:
    """None when ``quote`` is what ``output`` holds, else what differs. A line ``...`` stands for any lines, a
    line ending in ``...`` for any line that begins with what comes before; the others follow each other."""
    every = "numbers vary" in quote.flags
    real = [masked(line, every) for line in output.splitlines()]
    want = [masked(line, every) for line in quote.lines]

    def fits(quoted: str, line: str) -> bool:
        return line.startswith(quoted[:-3]) if quoted.endswith("...") else line == quoted

    def match(i: int, k: int) -> bool:   # quote lines from i on, output lines from k on
        if i == len(want):
            return True
        if want[i] == "...":
            return any(match(i + 1, j) for j in range(k, len(real) + 1))
        return k < len(real) and fits(want[i], real[k]) and match(i + 1, k + 1)

    if any(match(0, k) for k in range(len(real))):
        return None
    head = next((w for w in want if w != "..."), "")
    near = [line for line in real if head and (line == head or fits(head, line))]
    return (f"{quote} is not what the kata prints (masked: versions <v>, timings <s>"
            f"{', numbers <n>' if every else ''}).\nquoted:\n  " + "\n  ".join(want) +
            "\nprinted:\n  " + "\n  ".join(real) + ("" if near else f"\n(no printed line is {head!r})"))


def _run(argv: list[str], lang: str, cwd: Path, timeout: int = 300) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(COLUMNS="88", KATA_LANG=lang, KATA_DATA=str(cwd / "data"))
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)
    return done.stdout + done.stderr


@functools.cache
def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="kata-docs-"))


@functools.cache
def first_run(lang: str) -> str:
    """`pytest exercises` on the untouched stubs, as a learner's first run (in another language, after `kata lang
    LANG`, as its README starts)."""
    here = _folder() / f"first-{lang}"
    if pristine.write_stubs(here / "exercises"):
        pytest.skip("no pristine stubs (no .kata/pristine/ snapshot, no git history)")
    if lang != "en":
        from kata.commands.lang import switch

        switch(here, lang)
    return _run([sys.executable, "-m", "pytest", "exercises", "-p", "no:cacheprovider"], lang, here)


@functools.cache
def doctor(lang: str) -> str:
    """`kata doctor`, quick form."""
    return _run([sys.executable, "-m", "kata", "doctor"], lang, _folder())


@functools.cache
def seed_crash(lang: str) -> str:
    """`kata train --target exercises --device sim` at exercise 4 with the seed's `train` (plotting still a stub),
    set up as test_train.py's own check of the crash sets it up."""
    plotting = pristine.stub_source("plotting")
    if plotting is None:
        pytest.skip("no pristine stubs (no .kata/pristine/ snapshot, no git history)")
    here = _folder() / f"seed-{lang}"
    (seeds_training(here / "exercises") / "plotting.py").write_text(plotting, encoding="utf-8")
    return _run([sys.executable, "-m", "kata", "train", "--target", str(here / "exercises"), "--device", "sim",
                 "--train", "64", "--valid", "32", "--test", "32", "--epochs", "1", "--batch-size", "16",
                 "--out", "run"], lang, here)


# name: (what prints it, slow); None: measured, not reproduced by any run
PRINTED_BY = {"first-run": (first_run, False), "doctor": (doctor, True), "seed-crash": (seed_crash, True),
              "profile": None}


def test_every_quoted_output_is_one_the_self_tests_know():
    unknown = [str(q) for q in quotes() if q.name not in PRINTED_BY]
    assert not unknown, f"quoted outputs no self-test checks: {unknown}; add them to PRINTED_BY ({__name__})"
    unmarked = [str(q) for q in quotes() if PRINTED_BY.get(q.name) is None and "measured" not in q.flags]
    assert not unmarked, f"{unmarked}: a figure no run reproduces is marked (measured on DATE)"


def _quote_params():
    for q in quotes():
        how = PRINTED_BY.get(q.name)
        if how is not None:
            yield pytest.param(q, id=str(q), marks=[pytest.mark.slow] if how[1] else [])


@pytest.mark.parametrize("quote", list(_quote_params()))
def test_a_quoted_output_is_what_the_kata_prints(quote):
    printer, _ = PRINTED_BY[quote.name]
    difference = quoted_in(quote, printer(quote.lang))
    assert difference is None, difference


def test_a_quote_that_differs_from_the_output_is_found_and_shown():
    printed = ("head\n  1. devices   0/37  passed\n  2. data   0/23  passed\n"
               "kata accelerator: sim (torch 2.14.1+cu130)\n")

    def check(lines, flags=""):
        return quoted_in(Quote(ROOT / "README.md", "t", flags, lines), printed)

    assert check(["  1. devices   0/37  passed", "...", "kata accelerator: sim (torch 2.11.0)"]) is None, (
        "a gap, and a version masked")
    assert check(["  2. data   0/23 ..."]) is None, "a line's beginning"
    wrong = check(["  1. devices   0/37  passed", "kata accelerator: sim (torch 2.14.1)"])
    assert wrong is not None and "README.md: t is not what the kata prints" in wrong, "lines that do not follow"
    assert check(["  1. devices   0/38  passed"]) is not None
    assert check(["  1. devices   0/38  passed"], "numbers vary") is None


# --- the trust model's list of what rests on the graded process -------------------------------------------


@pytest.mark.parametrize("page", docs_list.pages(ROOT), ids=rel)
def test_the_trust_model_lists_exactly_what_rests_on_the_process(page):
    """docs/teaching.md (and each translation) names, in the bullet of each kind of the process (constant, shape,
    property, behaviour), exactly the records whose ``rests=`` include that kind; on failure, the names each
    bullet wants (``python tests/selftest/docs_list.py`` writes them)."""
    from kata import curriculum

    want = docs_list.wanted()
    listed = docs_list.listed(page.read_text(encoding="utf-8"), curriculum.names())
    wrong = []
    for kind, names in want.items():
        extra, missing = sorted(set(listed[kind]) - set(names)), sorted(set(names) - set(listed[kind]))
        if extra or missing:
            wrong.append(f"{kind}: listed but not resting on it: {extra}; resting on it but not listed: {missing}\n"
                         f"  the bullet wants: {docs_list.names_text(names)}")
    assert not wrong, (f"{rel(page)}: the list between its markers is not the records' rests= "
                       f"(records/*.py):\n" + "\n".join(wrong))
