"""The list of what rests on the graded process in docs/teaching.md (and each translation): read, wanted, rewritten.

Between ``<!-- resting on the process -->`` and ``<!-- end -->`` the page has one bullet per kind of
:data:`kata.records.PROCESS` (constant, shape, property, behaviour), in that order; each names, as
```exercise.record``` in backticks, the records whose ``rests=`` include its kind, first, separated by
commas; whatever prose follows the names is the page's own. test_docs.py holds each page to the code;

    python tests/selftest/docs_list.py

(from the checkout's root) rewrites each bullet's names from the code, keeping the prose around them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

START, END = "<!-- resting on the process -->\n", "<!-- end -->"
BULLET = re.compile(r"(?m)^(?=   - \*\*)")        # each kind's bullet begins "   - **Kind**"
NAME = re.compile(r"`([a-z_]+)\.([\w.]+)`")      # `exercise.record`
WIDTH = 100


def kinds() -> tuple[str, ...]:
    from kata import records

    return records.PROCESS


def wanted() -> dict[str, list[str]]:
    """For each kind of the process, the records (``exercise.record``, in the curriculum's and the file's order)
    whose answers rest on it, at least in part."""
    from kata import curriculum, records
    from kata.project import locate

    want: dict[str, list[str]] = {kind: [] for kind in kinds()}
    for exercise in curriculum.names():
        for name, record in records.load(locate().records_of(exercise)).items():
            for kind in want:
                if kind in record.rests:
                    want[kind].append(f"{exercise}.{name}")
    return want


def bullets(text: str) -> tuple[int, int, list[str]]:
    """(where the list starts, where it ends, its bullets) in a page's text."""
    if START not in text or END not in text:
        raise ValueError(f"the page has no list between {START.strip()} and {END}")
    start = text.index(START) + len(START)
    end = text.index(END, start)
    found = [b for b in BULLET.split(text[start:end]) if b.strip()]
    if len(found) != len(kinds()):
        raise ValueError(f"the list has {len(found)} bullets, not one per kind of the process {kinds()}")
    return start, end, found


def listed(text: str, exercises) -> dict[str, list[str]]:
    """For each kind, the ``exercise.record`` names its bullet shows (only those of ``exercises``)."""
    _start, _end, found = bullets(text)
    return {kind: [f"{ex}.{name}" for ex, name in NAME.findall(bullet) if ex in exercises]
            for kind, bullet in zip(kinds(), found)}


def names_text(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _rewrap(text: str) -> str:
    from kata.i18n import width

    lines, line = [], "  "
    for word in text.split(" "):
        if line.strip() not in ("-", "") and width(line + " " + word) > WIDTH:
            lines.append(line)
            line = "     " + word
        else:
            line = line + " " + word
    return "\n".join(lines + [line]) + "\n"


def rewritten(text: str, want: dict[str, list[str]]) -> str:
    """``text`` with each bullet's leading run of names (after its ``**Kind**...: ``) made ``want``'s."""
    start, end, found = bullets(text)
    out = []
    for kind, bullet in zip(kinds(), found):
        flat = " ".join(bullet.split())
        head = flat.index(": ") + 2
        run = re.match(r"`[^`]+`(?:, `[^`]+`)*", flat[head:])
        rest = flat[head + (run.end() if run else 0):]
        out.append(_rewrap(flat[:head] + names_text(want[kind]) + rest))
    return text[:start] + "".join(out) + text[end:]


def pages(root: Path) -> list[Path]:
    return [root / "docs" / "teaching.md", *sorted((root / "docs").glob("*/teaching.md"))]


def main() -> None:
    sys.path.insert(0, str(Path.cwd()))
    from kata.project import locate

    want = wanted()
    for page in pages(locate().root):
        text = page.read_text(encoding="utf-8")
        new = rewritten(text, want)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page}")


if __name__ == "__main__":
    main()
