"""The outside audit: what a submission's contract functions compute on inputs it could not know.

A grade must not rest on what a submission's own process says about itself.
So besides running the checks, the grader asks each exercise's contract
functions for *records*: results on inputs drawn afresh from a seed chosen
for that grading run. In the sandbox, :func:`run_records` calls the
submission's functions and sends back only data (kata/records/wire.py: JSON,
tensors as raw bytes). Outside it, a process that never imports the
submission's code runs the same records on the reference solutions, with the
same seed, and :func:`judge` compares them, facet by facet.

Each exercise NAME may have a module ``kata/audit/NAME.py`` with:

* ``RECORDS``: ``{name: function(module, draw, context) -> data}``: what to ask
  of the module, on what (``draw`` is that record's own seeded randomness,
  :class:`Draw`), and what to keep of the answer. Aliasing and in-place facts
  go into the data itself: the caller's model after ``train``, a tensor's
  values after its copy was written to.
* ``FACETS``: ``{name: Facet(record, compare, about, rests)}``: one fact a check may rest on, read from a
  record with a comparison (:func:`same`, :func:`close`, or a projection of the record first), and what
  it rests on (:data:`RESTS`): the *work* (the function's answer on inputs drawn for this hand-in, which
  it can't know without computing it), the hand-in's *source* (read outside its process,
  kata/audit/declared.py), or the graded *process* itself: a constant of the contract, a type or shape
  the inputs already tell, a property any made-up value can have, or a behaviour no output shows. A
  record that only process facts read is drawn from the run's shared seed; the others from a seed of the
  hand-in's own, so that nothing one hand-in records is valid for another.
* ``SOURCE_READING`` (optional): ``function(files) -> data``: what the exercise's module declares, read from
  its text in the grader's process (never from the sandbox): the record named ``source``.

A check names the facets its verdict implies with ``@pytest.mark.audit("NAME.facet", ...)``
(kata/harness/settings.py registers the marker); a check that passes in the
sandbox earns its points only when each of them agrees. What only the running
process can see (how many host syncs ran, which mode a forward pass ran in)
is named with ``observed="..."`` on the same marker: those points rest on the
process, as the process facts do (docs/teaching.md, "The trust model", lists them).

The records never import ``kata.checks`` (the checks' helpers hold the book's
CNN and loop): the sandbox that runs them has neither those nor the checks.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kata.i18n import _, say
from kata.records import (
    BEHAVIOUR,
    CONSTANT,
    EXERCISE_TIMEOUTS,
    PROCESS,
    PROPERTY,
    RECORD_SECONDS,
    RESTS,
    SHAPE,
    SOURCE,
    WORK,
    Draw,
    TimedOut,
    timed,
)
from kata.records.declared import files_of
from kata.records.wire import diff, tensor_values, typed

__all__ = ["BEHAVIOUR", "CONSTANT", "PROCESS", "PROPERTY", "RECORD_SECONDS", "RESTS", "SHAPE", "SOURCE", "WORK",
           "SOURCE_RECORD", "Context", "Draw", "Facet", "close", "diff", "drawn_per_hand_in", "facets", "files_of",
           "judge", "marked", "project", "records", "records_here", "run_records", "same", "source_record",
           "tensor_values", "typed"]

# What a fact rests on (Facet.rests) is what a record rests on: kata.records.RESTS.
SOURCE_RECORD = "source"



@dataclass
class Context:
    """What every record of one hand-in shares: its seeds and where things are."""

    seed: int                              # the hand-in's own (the records a work fact reads)
    tmp: Path                              # a folder records may write into (a LivePlot's PNG, a checkpoint)
    celeba: Path | None = None             # a small synthetic CelebA drawn for this run (the folder above celeba/)
    accelerator: Any = None                # a torch.device other than the CPU (simgpu, CUDA), or None
    reference: bool = False                # the reference's run: records may add what only the judge reads
    shared: int | None = None              # the run's (the records only process facts read); None: ``seed``


Compare = Callable[[Any, Any], "str | None"]


def same(mine, ref) -> str | None:
    """Exactly the reference's (a mapping may be any dict)."""
    return diff(mine, ref)


def close(rel: float, abs_: float = 0.0) -> Compare:
    """The reference's numbers, to a check's tolerance."""
    return lambda mine, ref: diff(mine, ref, rel, abs_)


def project(pick: Callable[[Any], Any], compare: Compare = same) -> Compare:
    """Compare only what ``pick`` takes of each record."""
    def compared(mine, ref):
        try:
            picked = pick(mine)
        except (KeyError, IndexError, TypeError, ValueError):
            return _("the record does not hold what this facet reads")
        return compare(picked, pick(ref))
    return compared


@dataclass(frozen=True)
class Facet:
    """One fact a check may rest on: ``record`` read with ``compare`` (the record's own name when empty), and
    what it rests on (one of :data:`RESTS`)."""

    about: str
    compare: Compare = same
    record: str = ""
    rests: str = WORK

    def __post_init__(self):
        if self.rests not in RESTS:
            raise ValueError(f"a facet rests on one of {RESTS}, not {self.rests!r}")


@dataclass
class _Probes:
    records: dict[str, Callable] = field(default_factory=dict)
    facets: dict[str, Facet] = field(default_factory=dict)
    source: Callable | None = None


def _probes(exercise: str) -> _Probes:
    try:
        module = importlib.import_module(f"kata.audit.{exercise}")
    except ModuleNotFoundError as err:
        if err.name != f"kata.audit.{exercise}":
            raise
        return _Probes()
    return _Probes(dict(module.RECORDS), dict(module.FACETS), getattr(module, "SOURCE_READING", None))


def marked(exercise: str, mark, callspec=None) -> dict:
    """What a check's ``@pytest.mark.audit(...)`` says, in full: its facets' names (``{param}`` and ``{id}``
    filled from the check's parameters) and what it observed."""
    fields = {**(callspec.params if callspec else {}), "id": callspec.id if callspec else ""}
    return {"facets": [f"{exercise}.{f.format(**fields)}" for f in mark.args],
            "observed": mark.kwargs.get("observed", "")}


def records(exercise: str) -> list[str]:
    """The records exercise ``exercise`` has ([] without a kata/audit/NAME.py)."""
    return list(_probes(exercise).records)


def facets(exercise: str) -> dict[str, Facet]:
    """The exercise's facets, by their full name ``exercise.facet``."""
    return {f"{exercise}.{name}": facet for name, facet in _probes(exercise).facets.items()}


def _record_of(name: str, facet: Facet) -> str:
    return facet.record or name.split(".", 1)[1]


def drawn_per_hand_in(exercise: str) -> set[str]:
    """The records a work fact reads: drawn from the hand-in's own seed (the rest from the run's)."""
    return {_record_of(name, f) for name, f in facets(exercise).items() if f.rests == WORK}


def records_here(folder: Path, exercise: str, context: Context, module=None) -> dict[str, dict]:
    """Every record of the code in ``folder`` (or of ``module``, imported from it) made in this process, with what
    its source declares: the reference's records, and the self-tests'. (A hand-in's are made in its sandbox.)"""
    if module is None:
        from kata.harness.target import Target

        module = Target(folder).load(exercise)
    found = dict(run_records(exercise, module, context))
    source = source_record(exercise, files_of(folder))
    return {**found, SOURCE_RECORD: source} if source is not None else found


def source_record(exercise: str, files: dict[str, str]) -> dict | None:
    """What the exercise's module declares, read from the hand-in's ``files`` (name -> text) in this process:
    ``{"data": ...}`` or ``{"error": ...}``; None where the exercise reads nothing from the source."""
    reader = _probes(exercise).source
    if reader is None:
        return None
    if f"{exercise}.py" not in files:
        return {"error": say("{file} was not handed in", file=exercise + ".py")}
    try:
        return {"data": reader(files)}
    except Exception as exc:  # noqa: BLE001 - a source the reader can't take: the facts reading it disagree
        return {"error": _error(exc)}


def _error(exc: BaseException) -> str:
    if isinstance(exc, TimedOut):
        return say("did not finish within {seconds:g} s", seconds=RECORD_SECONDS)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def run_records(exercise: str, module, context: Context, skip=()) -> Iterator[tuple[str, dict]]:
    """Each record of ``exercise`` on ``module`` (or on what the function ``module`` imports, in at most
    ``2 * RECORD_SECONDS``: an import that never ends is the exercise's): (name, {"data": ...} or {"error": "..."})."""
    timeouts = 0
    names = [n for n in _probes(exercise).records if n not in skip]
    own = drawn_per_hand_in(exercise)
    if callable(module):
        try:
            with timed(2 * RECORD_SECONDS):
                module = module()
        except (Exception, TimedOut, SystemExit) as exc:  # noqa: BLE001 - the submission's error is the record
            why = say("its import did not finish within {seconds:g} s", seconds=2 * RECORD_SECONDS) \
                if isinstance(exc, TimedOut) else \
                (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            yield from ((name, {"error": why}) for name in names)
            return
    for name in names:
        record = _probes(exercise).records[name]
        if timeouts >= EXERCISE_TIMEOUTS:
            yield name, {"error": say("not asked: {n} records of this exercise ran out of time", n=timeouts)}
            continue
        try:
            with timed(RECORD_SECONDS):
                seed = context.seed if name in own or context.shared is None else context.shared
                result = {"data": record(module, Draw(seed, f"{exercise}.{name}"), context)}
        except (Exception, TimedOut) as exc:  # noqa: BLE001 - the submission's error is the record
            timeouts += isinstance(exc, TimedOut)
            result = {"error": _error(exc)}
        except SystemExit as exc:
            result = {"error": f"SystemExit({exc.code!r})"}
        yield name, result


def judge(exercise: str, mine: dict[str, dict], ref: dict[str, dict]) -> dict[str, str | None]:
    """Each facet of ``exercise``: None when the submission's record agrees with the reference's, else
    what disagreed, in words; ``"unavailable: ..."`` when the reference could not make the record here."""
    verdicts = {}
    for name, facet in facets(exercise).items():
        record = _record_of(name, facet)
        r, m = ref.get(record), mine.get(record)
        if not isinstance(r, dict) or "data" not in r:
            verdicts[name] = "unavailable: " + say("the reference's record {record} failed here ({error})",
                                                   record=record, error=(r or {}).get("error", _("not made")))
        elif not isinstance(m, dict) or ("data" not in m and "error" not in m):
            verdicts[name] = _("no record came back (the audit's run ended before it)")
        elif "error" in m:
            verdicts[name] = say("raised {error}", error=m["error"])
        else:
            try:
                verdicts[name] = facet.compare(m["data"], r["data"])
            except Exception as exc:  # noqa: BLE001 - a malformed record disagrees; it never crashes the grader
                verdicts[name] = say("the record could not be read ({kind}: {exc})", kind=type(exc).__name__, exc=exc)
                traceback.clear_frames(exc.__traceback__)
    return verdicts
