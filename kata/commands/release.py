"""``kata release OUT``: the learners' copy of the kata, without the answers.

Like otter-grader's ``otter assign`` or nbgrader's generate step: everything a
learner needs to do the exercises and run the checks (the stubs, the checks
and their helpers, the kata package, pyproject.toml, the exercise contract),
and nothing that holds answers: no ``solutions/``, no grader self-tests (they
carry known-wrong and hostile solutions), no caches, datasets or progress
files, and a short README for learners in place of the teacher's. The stubs
are the pristine ones (:func:`kata.pristine.stub_source`: the checkout's
``exercises/NAME.py`` while it is a stub, else the stub in git), whatever the
teacher's ``exercises/`` holds; as handed out they go to ``.kata/pristine/`` too
(``kata reset NAME`` restores one).
``kata release --lang ko OUT`` hands out a Korean copy: its stubs (and their
snapshot) with their texts in Korean (:func:`kata.i18n.translate_stub`; the code
is the same), its README in Korean, and ``.kata-lang`` saying ``ko`` (kept in the
copy's git repository too), so the checks and the hints speak Korean.
The checks'
helpers (``kata.checks``: the book's CNN and loop that the checks compare
with) stay, as the checks need them; graded code that calls them earns nothing
for it (the records' sandbox does not hold them: kata/grading/sandbox.py), and
the grader's sandboxes hold no solutions. The release refuses to write into an existing non-empty folder.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from kata import curriculum
from kata.commands.lang import LANGUAGE_NAMES
from kata.files import atomic_write
from kata.i18n import LANG_FILE, N_, _, known, say, translate_stub, translation
from kata.pristine import differences, stub_source, write_snapshot
from kata.project import Project, locate

__all__ = ["HELP", "STUDENT_README", "add_parser", "release", "run"]

HELP = N_("write the learners' copy (no solutions) into a new folder")

TOP_FILES = ("pyproject.toml", "conftest.py", "CONTRACT.md", "LICENSE", "LICENSE.md", "LICENSE.txt", ".gitignore")
FOLDERS = ("kata", "tests", "records", "exercises")
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".hypothesis", ".benchmarks", ".kata-progress.json", LANG_FILE}

# What a release in a language adds to its .gitignore: the language it was handed out in
# is part of the copy (a learner's own `kata lang` choice is ignored, as their progress is).
KEEP_LANG_FILE = "\n# The language this copy was handed out in (`kata release --lang`): part of the copy\n!/{}\n"

STUDENT_README = N_("""# device-kata

Learn, once and for good, where a PyTorch tensor lives, by building the CelebA
smile classifier of Raschka et al., *Machine Learning with PyTorch and
Scikit-Learn* (chapter 14), on a laptop without a GPU as well as on a real one.

```bash
python3 -m venv .venv && source .venv/bin/activate    # Python 3.11 or newer
pip install -e .
pytest exercises
```

Every check fails at first: each exercise is a stub in `exercises/` that raises
`NotImplementedError` with a pointer. Fill them in, in order, and rerun; the run
ends with a table of where you stand and what to do next.

| # | exercise | what it teaches |
|---|----------|-----------------|
__TABLE__

- `kata list` shows the order, `kata hint NAME` a hint.
- `pytest exercises/NAME.py` checks one exercise; `pytest exercises` all of them.
- `CONTRACT.md` lists the names and behaviours each module must provide.
- The checks marked `cuda` run on a simulated accelerator when there is no GPU.

## Handing in

Hand in your `exercises/` folder (its __COUNT__ `.py` files, one per exercise, or a zip of
them), as your teacher asks. It is graded with the same checks `pytest exercises` runs, in a
sandbox.

Your code may use what it needs: `torch`, `torchvision`, `numpy`, `matplotlib`,
the standard library (`os`, `pathlib`, `logging`, `dataclasses`, ...), `tqdm`,
`kata.celeba`, and your own helper modules beside your exercises (`from
._helpers import ...`). Each check's points need two things: the check passes,
and your functions, called again by the grader on inputs drawn for the grading
run, give the reference's answers. Code that takes the checks' own helpers
(`kata.checks`) earns nothing for what they compute.
""")


def _readme(lang: str = "en") -> str:
    """The learners' README, in ``lang``."""
    text = translation(lang).gettext
    rows = [f"| {ex.number} | {ex.name} (`exercises/{ex.name}.py`) | {text(ex.teaches_en).strip()} |"
            for ex in curriculum.exercises()]
    return text(STUDENT_README).replace("__TABLE__", "\n".join(rows)).replace("__COUNT__", str(len(rows)))


def _in_language(out: Path, lang: str) -> None:
    """The release's stubs with their texts in ``lang``; each still a stub, and still Python."""
    for ex in curriculum.exercises():
        path = out / "exercises" / f"{ex.name}.py"
        source = path.read_text(encoding="utf-8")
        translated = translate_stub(source, lang)
        try:
            ast.parse(translated)
        except SyntaxError as err:   # the kata's own bug: never hand out a stub that does not run
            raise RuntimeError(f"exercises/{ex.name}.py in {lang} does not parse: {err}") from None
        if differences(path, translated):
            raise RuntimeError(f"exercises/{ex.name}.py in {lang} is no longer a stub: "
                               f"{', '.join(differences(path, translated))}")
        atomic_write(path, translated)


def _stubs(project: Project) -> dict[str, str]:
    """Each exercise's pristine stub, by its path in the copy (a teacher's exercises/ may hold their own work)."""
    found = {f"exercises/{ex.name}.py": stub_source(ex.name, project.root) for ex in curriculum.exercises()}
    missing = [Path(rel).stem for rel, source in found.items() if source is None]
    if missing:
        raise ValueError(say("no stub of {exercises} to hand out: exercises/ holds other code there, and no pristine "
                             "copy was found (no .kata/pristine/ snapshot, no git history)",
                             exercises=", ".join(missing)))
    return found


def _files(project: Project, stubs: dict[str, str]) -> list[tuple[str, Path]]:
    """The files copied as they are: the ``stubs`` are written apart."""
    picked = [(name, project.root / name) for name in TOP_FILES if (project.root / name).is_file()]
    for folder in FOLDERS:
        for path in sorted((project.root / folder).rglob("*")):
            rel = path.relative_to(project.root)
            if (path.is_file() and not path.is_symlink() and path.suffix != ".pyc" and not SKIP_PARTS & set(rel.parts)
                    and rel.parts[:2] != ("tests", "selftest")   # the grader's tests hold known-wrong solutions
                    and rel.as_posix() not in stubs):
                picked.append((rel.as_posix(), path))
    return picked


def release(out: str | Path, project: Project | None = None, lang: str | None = None) -> list[str]:
    """Write the learners' copy into ``out`` (new or empty); returns the files written, relative to it.

    ``lang`` (``en``, ``ko``): the language of its stubs and README, recorded in its ``.kata-lang``
    (None: the stubs as they are, in English, and no ``.kata-lang``: each learner's locale decides)."""
    if lang is not None:
        known(lang)
    project = project or locate()
    out = Path(out).expanduser().resolve()
    if out == project.root or out.is_relative_to(project.root) and not out.is_relative_to(project.root / "dist"):
        raise ValueError(say("{out} is inside the kata itself: choose a folder outside {root} (or under dist/)",
                             out=out, root=project.root))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(say("{out} exists and is not empty: a release goes into a new folder", out=out))
    stubs = _stubs(project)   # before anything is written
    written = []
    for rel, path in _files(project, stubs):
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
        written.append(rel)
    for rel, source in stubs.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(source, encoding="utf-8")
        written.append(rel)
    if lang is not None:
        _in_language(out, lang)
        (out / LANG_FILE).write_text(lang + "\n", encoding="utf-8")
        written.append(LANG_FILE)
        if (out / ".gitignore").is_file():
            with open(out / ".gitignore", "a", encoding="utf-8") as f:
                f.write(KEEP_LANG_FILE.format(LANG_FILE))
    (out / "README.md").write_text(_readme(lang or "en"), encoding="utf-8")
    written.append("README.md")
    # The stubs as handed out (in the release's language), for `kata reset NAME`.
    written += [path.relative_to(out).as_posix() for path in write_snapshot(out / "exercises", out)]
    leaked = [rel for rel in written if rel.split("/")[0] == "solutions"]
    if leaked:  # never: the filters above keep them out
        shutil.rmtree(out)
        raise RuntimeError(f"the release would have held solutions: {leaked}")
    return sorted(written)


def add_parser(sub):
    p = sub.add_parser("release", help=_(HELP),
                       description=_("Write the learners' copy of the kata into OUT (a new or empty folder): the "
                                     "stubs, the checks, the kata package and a short README for learners; no "
                                     "solutions/ and no grader self-tests. Hand it out (or push it as the class's "
                                     "repository); collect their exercises/ folders; grade them with `kata grade`. "
                                     "With --lang ko its stubs and README are in Korean, and so are its checks' "
                                     "messages and hints."))
    p.add_argument("out", metavar="OUT", help=_("the folder to write (new, or empty)"))
    return p


def run(args) -> int:
    lang = getattr(args, "lang", None)   # `kata release --lang ko OUT`: a Korean copy
    written = release(args.out, lang=lang)
    print(say("wrote the learners' copy: {out} ({count} files, no solutions/)", out=args.out, count=len(written)))
    if lang is not None:
        print(say("  its stubs and README are in {language}, and its {lang_file} says {lang}",
                  language=_(LANGUAGE_NAMES[lang]), lang_file=LANG_FILE, lang=lang))
    print(say("  try it: cd {out} && pip install -e . && pytest exercises   (every check fails on the stubs)",
              out=args.out))
    return 0
