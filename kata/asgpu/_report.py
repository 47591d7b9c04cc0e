"""What ``kata run`` says at the end: the syncs that kept the GPU waiting, and a failure explained.

The syncs are :mod:`kata.sim`'s count (:func:`kata.sim.count_syncs`: each event's kind and the
line of the script that asked for it), grouped by kind and by line, with each line's count per
pass over the DataLoader whose loop holds it (:class:`kata.asgpu._loops.Passes`).  A failure is
PyTorch's own message in CUDA's words at the script's line, with the kata's lesson where it has
one (:mod:`kata.checks.lessons`).
"""

from __future__ import annotations

import linecache
import traceback
from collections import Counter
from pathlib import Path

from kata.asgpu._limits import NotSimulated
from kata.i18n import N_, _, say

__all__ = ["explain", "failure", "lesson_for", "per_batch_lines", "sync_report", "tally"]

# How each kind of sync is written in code (kata.sim's kinds); the others are said in words.
CODE = {"item": "`.item()`", "float": "`float()`", "int": "`int()`", "bool": "`bool()` / `if tensor:`",
        "cpu": "`.cpu()` / `.to('cpu')`", "tolist": "`.tolist()`", "numpy": "`.numpy()`",
        "equal": "`torch.equal`", "nonzero": "`nonzero`", "masked_select": "`masked_select`",
        "unique": "`unique`", "repeat_interleave": "`repeat_interleave`",
        "synchronize": "`torch.cuda.synchronize()`"}
WORDS = {"repr": N_("printing a GPU tensor"), "to_device": N_("a blocking copy to the GPU"),
         "index": N_("indexing with a boolean mask on the GPU"),
         "sync": N_("a sync")}   # on a real GPU (kata run --device cuda): CUDA's debug mode names no kind

SYNC_HEADER = N_("kata run: the host waited for the GPU {total} times (syncs, as CUDA's sync debug mode counts them)")
SYNC_HEADER_ONCE = N_("kata run: the host waited for the GPU once (a sync, as CUDA's sync debug mode counts them)")
NO_SYNCS = N_("kata run: the host never waited for the GPU (no syncs)")
BY_KIND = N_("  by kind: {kinds}")
BY_LINE = N_("  by line (the {shown} most frequent of {lines}):")
BY_EVERY_LINE = N_("  by line:")
LINE = N_("    {where}  {kind} {count} times  | {source}")
LINE_ONCE = N_("    {where}  {kind} once  | {source}")
LINE_PER_PASS = N_("    {where}  {kind} {count} times, {per} per pass over the DataLoader at {loop} ({passes} passes)"
                   "  | {source}")
LINE_ONE_PASS = N_("    {where}  {kind} {count} times, in the one pass over the DataLoader at {loop}  | {source}")
LINE_ONCE_IN_LOOP = N_("    {where}  {kind} once, in the loop over the DataLoader at {loop}  | {source}")
# A line that syncs in more than one DataLoader's loop (a model's forward, run by training and by evaluation), or
# outside them too: each other loop, and what is outside, after the first.
ALSO_PER_PASS = N_(", {per} per pass over the DataLoader at {loop} ({passes} passes)")
ALSO_ONE_PASS = N_(", {count} in the one pass over the DataLoader at {loop}")
ALSO_OUTSIDE = N_(", {count} outside those loops")
PER_BATCH_HINT = N_("  A sync per batch keeps a GPU waiting for Python at every step: keep running sums on the GPU "
                    "(a tensor) and read them once per epoch (.item() after the loop).")
TRACEBACK = N_("Traceback (most recent call last; the script's own lines):")
FAILED_AT = N_("kata run: the script failed at {where}: {source}")
FAILED = N_("kata run: {script} failed")
WHY_AND_FIX = N_("Why, and the fix: {lesson}")
MIXED_ADVICE = N_("Put every tensor an operation takes on one device: the model with model.to(device), each batch "
                  "with x = x.to(device), and the numbers you keep with .item() or .to(device).")

_SHOWN = 10


def _kind(kind: str) -> str:
    return CODE.get(kind) or (_(WORDS[kind]) if kind in WORDS else kind)


def _short(where: str, folder: Path) -> tuple[str, str]:
    """('train.py:61', the line's source) for 'FILE:LINE'."""
    file, _sep, line = where.rpartition(":")
    try:
        name = str(Path(file).resolve().relative_to(folder))
    except ValueError:
        name = file
    source = linecache.getline(file, int(line)).strip() if line.isdigit() else ""
    return f"{name}:{line}", source


def tally(syncs, passes) -> tuple[Counter, dict]:
    """The syncs by (kind, 'FILE:LINE'), and for each, its count in each DataLoader pass's loop that holds it."""
    lines = Counter()
    loops: dict = {}
    for index, (kind, where) in enumerate(syncs.events):
        lines[(kind, where)] += 1
        loop = passes.loop_of(index)
        if loop is not None:
            loops.setdefault((kind, where), Counter())[loop] += 1
    return lines, loops


def _per_pass(counts: Counter, passes) -> tuple[str, float, int]:
    """Of a line's counts by loop: the loop that holds most of them, how many per pass over it, and its passes."""
    return _in_loop(*counts.most_common(1)[0], passes)


def _in_loop(label: str, inside: int, passes) -> tuple[str, float, int]:
    """A loop's label, a line's count per pass over it (``inside`` in all), and its passes."""
    runs = len(passes.spans.get(label, ())) or 1
    return label, inside / runs, runs


def _with_other_loops(line: str, tail: str, counts: Counter, count: int, passes, folder: Path) -> str:
    """A report's line, its count in each other loop that holds it and outside them said before its source."""
    also = []
    for label, inside in counts.most_common()[1:]:
        _label, per, runs = _in_loop(label, inside, passes)
        loop = _short(label, folder)[0]
        also.append(say(ALSO_PER_PASS, per=format(per, "g"), loop=loop, passes=runs) if runs > 1
                    else say(ALSO_ONE_PASS, count=inside, loop=loop))
    outside = count - sum(counts.values())
    if outside:
        also.append(say(ALSO_OUTSIDE, count=outside))
    if not also or not line.endswith(tail):
        return line
    return line[:-len(tail)] + "".join(also) + tail


def per_batch_lines(syncs, passes, folder: Path) -> list[str]:
    """The lines ('train.py:61') that wait for the GPU more than once per pass over a DataLoader, whatever kind of
    sync each is (the simulator names kinds; CUDA's debug mode says 'a sync'): what a GPU's run and the
    simulator's must agree on."""
    _lines, loops = tally(syncs, passes)
    return sorted({_short(where, folder)[0] for (_sync, where), counts in loops.items()
                   if _per_pass(counts, passes)[1] > 1})


def sync_report(syncs, passes, folder: Path) -> str:
    """The syncs by kind and by line (the most frequent first), each line's per pass over its loop."""
    if not syncs.total:
        return _(NO_SYNCS)
    kinds = ", ".join(f"{_kind(kind)} {count}" for kind, count in syncs.by_kind.most_common())
    lines, loops = tally(syncs, passes)
    out = [say(SYNC_HEADER if syncs.total > 1 else SYNC_HEADER_ONCE, total=syncs.total), say(BY_KIND, kinds=kinds),
           say(BY_LINE, shown=_SHOWN, lines=len(lines)) if len(lines) > _SHOWN else _(BY_EVERY_LINE)]
    per_batch = False
    for (kind, where), count in lines.most_common(_SHOWN):
        name, source = _short(where, folder)
        if (kind, where) in loops:
            label, per, runs = _per_pass(loops[(kind, where)], passes)
            per_batch = per_batch or per > 1
            per_pass = format(per, "g")
            form = LINE_ONCE_IN_LOOP if count == 1 else LINE_PER_PASS if runs > 1 else LINE_ONE_PASS
            line = say(form, where=name, kind=_kind(kind), count=count, per=per_pass,
                       loop=_short(label, folder)[0], passes=runs, source=source)
            out.append(_with_other_loops(line, f"  | {source}", loops[(kind, where)], count, passes, folder))
        else:
            out.append(say(LINE if count > 1 else LINE_ONCE, where=name, kind=_kind(kind), count=count,
                           source=source))
    if per_batch:
        out.append(_(PER_BATCH_HINT))
    return "\n".join(out)


def failure(exc: BaseException, script: Path, words) -> dict:
    """What failed, as data: {"at": the script's line ('train.py:164', None where no frame of it is in the
    traceback), "error": PyTorch's message's first line, in ``words``}."""
    folder = script.resolve().parent
    return {"at": _failed_at(_user_frames(exc, folder), folder),
            "error": words(f"{type(exc).__name__}: {exc}").splitlines()[0]}


def _failed_at(frames: list, folder: Path) -> str | None:
    """'train.py:164', the script's innermost line in the traceback ``frames``, or None."""
    return _short(f"{frames[-1].filename}:{frames[-1].lineno}", folder)[0] if frames else None


def _user_frames(exc: BaseException, folder: Path) -> list:
    frames = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith("<"):
            continue
        try:
            Path(frame.filename).resolve().relative_to(folder)
        except ValueError:
            continue
        frames.append(frame)
    return frames


def lesson_for(exc: BaseException, folder: Path) -> str | None:
    """The kata's lesson for this error, in the learner's language, or None."""
    from kata.checks import lessons
    from kata.checks.checkpoints import unreadable_problem
    from kata.checks.messages import (
        device_type,
        loss_misuse,
        mixed_devices,
        numpy_refusal,
        placed_of,
        tensors_by_device,
    )

    refusal = numpy_refusal(exc)
    if refusal is not None:
        return _(lessons.NUMPY_LESSONS[refusal])
    unreadable = unreadable_problem(type(exc).__name__, str(exc))   # torch.load's weights_only=True refused a file
    if unreadable is not None:
        return unreadable
    if mixed_devices(exc):
        places = placed_of(exc, folder)
        models_on_gpu = any(p["kind"] == "module" and device_type(p) not in (None, "cpu") for p in places.values())
        cpu_tensor = any(p["kind"] == "tensor" and device_type(p) == "cpu" for p in places.values())
        placed = tensors_by_device(places)
        frame = f"\n{say(lessons.MIXED_DEVICES_FRAME, placed=placed)}" if placed else ""
        if models_on_gpu and cpu_tensor:
            return _(lessons.BATCH_NOT_MOVED) + frame
        return say(lessons.MIXED_DEVICES, advice=_(MIXED_ADVICE)) + frame
    return loss_misuse(exc)


def explain(exc: BaseException, script: Path, words) -> str:
    """A failure as a GPU machine gives it: the script's frames, PyTorch's message in CUDA's words
    (``words``: a function of the text), the script's line, and the kata's lesson where it has one."""
    folder = script.resolve().parent
    frames = _user_frames(exc, folder)
    message = words(f"{type(exc).__name__}: {exc}")
    out = []
    if isinstance(exc, NotSimulated):  # one line says what, and the script's line where
        out.append(f"kata run: {exc}")
        if frames:
            out.append(say(FAILED_AT, where=_failed_at(frames, folder), source=(frames[-1].line or "").strip()))
        return "\n".join(out)
    if frames:
        out.append(_(TRACEBACK))
        out.extend(line.rstrip("\n") for line in traceback.format_list(frames))
    out.append(message)
    if frames:
        out.append(say(FAILED_AT, where=_failed_at(frames, folder), source=(frames[-1].line or "").strip()))
    else:
        out.append(say(FAILED, script=script.name))
    lesson = lesson_for(exc, folder)
    if lesson:
        out.append(words(say(WHY_AND_FIX, lesson=lesson)))
    return "\n".join(out)
