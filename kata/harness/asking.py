"""What a check reads: the answers of an exercise's records (kata/records), asked here or read from a file.

An exercise with records (``records/NAME.py``) has, as its fixture, an :class:`Asking`: a check calls
``devices.cases("device_of_tensors")`` (every case: its inputs, drawn here, and the module's answer) or
``devices.answer("pick_device", True, False)`` (the answer to one case) and asserts its rule on them.

* In a learner's run (``pytest exercises``, ``kata watch``, ``kata.check``, a notebook) the records are asked
  here, once per run and target, and their answers go through the wire and back (kata/records/wire.py), so a
  check reads exactly what it would read in grading. An exception the module raised is raised again where
  the check reads that answer, with the module's own traceback. In a run of several exercises, a helper
  on the machine's second core asks some of them ahead (kata/harness/prefetch.py): their answers are read
  from it, what the module printed and warned given again; an answer with an error is asked here again.
* With ``--records-from FILE`` (``kata grade``: the answers a hand-in's sandbox gave, and the seed the grader
  drew) nothing of the hand-in is imported: the inputs are drawn here from the seed, the answers read from the
  file; an error comes back as its text.

Each record a check reads is named in the check's report with what it rests on (kata.records.RESTS), as the
user property ``kata_record`` (``["exercise.record", [rests]]``): the grader lists the points that rest on the
graded process.
"""

from __future__ import annotations

import builtins
import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from kata import records as _records
from kata.harness import accelerator as _acc
from kata.harness.target import NotSetYet, Target, TargetError
from kata.i18n import _, say
from kata.project import locate
from kata.records.declared import files_of
from kata.records.wire import Unreadable, untyped

__all__ = ["AHEAD", "RAISED", "SEED", "AnswerError", "Asking", "Case", "RecordsFile", "asking_for", "celeba_folder",
           "celeba_of", "reading"]

SEED = 0   # the records' seed in a learner's run: the same inputs every run (grading draws one per hand-in)
AHEAD = pytest.StashKey["object"]()   # the run's helper that asks records ahead (kata/harness/prefetch.py), if any

_NO_TARGET = SimpleNamespace(path=None)   # the target of answers read from a file: no folder
_CURRENT: list = [None]   # the check being run (kata/harness/plugin.py sets it): its report says what it read


def reading(item) -> None:
    """From now on, the answers read are ``item``'s (None: no check's)."""
    _CURRENT[0] = item


RAISED = "kata_raised"   # a user property: an error the learner's code raised in a record a check read: [kind, place]


def _met(kind: str, at) -> None:
    """The current check reads a record in which the learner's code raised an error at ``at`` ([file, line,
    function, source]), one the record did not expect (it left the record, or the record kept it with
    kata.records.caught): its failure names that line (kata.harness.failures), whatever the check says of it."""
    item = _CURRENT[0]
    if item is None or not (isinstance(at, list) and len(at) == 4) or kind in ("NotImplementedError", "NotSetYet"):
        return
    entry = (RAISED, [str(kind), at])
    if entry not in item.user_properties:
        item.user_properties.append(entry)


def _caught_in(node, depth: int = 0) -> list:
    """Each error a record caught in the learner's code (kata.records.caught: a dict with ``kind`` and
    ``raised_at``) that an answer as the wire carries it holds, ``[kind, raised_at]``, found without decoding
    the rest (its tensors)."""
    if depth > 40 or not isinstance(node, dict) or node.get("t") not in ("dict", "list", "tuple", "namedtuple"):
        return []
    found = []
    if node["t"] == "dict":
        keys = [k.get("v") if isinstance(k, dict) else None for k in node.get("k", [])]
        if "kind" in keys and "raised_at" in keys:
            values = dict(zip(keys, node.get("v", [])))
            try:
                found.append([untyped(values["kind"]), untyped(values["raised_at"])])
            except Unreadable:
                pass
    for inner in node.get("v", []):
        found += _caught_in(inner, depth + 1)
    return found


class AnswerError(AssertionError):
    """An answer that came back as an error, or could not be read (in a run that reads answers from a file)."""


@dataclass
class Case:
    """One case of a record: its inputs (drawn in this process) and what the module answered."""

    args: tuple
    result: dict

    @property
    def raised(self) -> BaseException | None:
        """What the module raised for this case (None: it answered): here, the exception itself; from a file,
        one of the same built-in kind with its text (an AnswerError for any other kind). Either way it carries
        where the learner's code raised it (``kata_raised_at``: kata.records.raised_at) and where the tensors of
        that frame were (``kata_placed``: kata.records.placed), as the record said them."""
        exc = self._raised()
        for key in ("raised_at", "placed"):
            if exc is not None and key in self.result:
                with contextlib.suppress(AttributeError):   # a type that takes no attributes: its traceback tells
                    setattr(exc, f"kata_{key}", self.result[key])
        return exc

    def _raised(self) -> BaseException | None:
        exc = self.result.get("exc")
        if exc is not None:
            return exc.with_traceback(self.result.get("tb"))
        if "error" not in self.result:
            return None
        text, kind = str(self.result["error"]), str(self.result.get("kind"))
        if "kind" not in self.result:   # said by the grader (the record was not answered), not raised by the module
            return AnswerError(text)
        message = text.removeprefix(f"{kind}:").strip()
        if kind in ("NotImplementedError", "NotSetYet"):
            return NotSetYet(message)
        if kind == "TargetError":
            return TargetError(message)
        made = getattr(builtins, kind, None)
        if isinstance(made, type) and issubclass(made, Exception) and not issubclass(made, BaseExceptionGroup):
            try:
                return made(message)
            except Exception:  # noqa: BLE001 - a kind that takes other arguments: said as text
                pass
        return AnswerError(say("it raised {error}", error=text))

    @property
    def answer(self):
        """The module's answer, made again from the wire (a fresh value each time); what it raised, raised again."""
        exc = self.raised
        if exc is not None:
            raise exc
        try:
            return untyped(self.result.get("data"))
        except Unreadable as exc:
            raise AnswerError(say("its answer could not be read ({why})", why=str(exc))) from None


class RecordsFile:
    """The answers of one hand-in's records and the seed they were drawn from (``--records-from``)."""

    def __init__(self, path: str | Path):
        found = json.loads(Path(path).read_text(encoding="utf-8"))
        self.seed = int(found["seed"])
        self.records: dict = found.get("records") or {}
        self.celeba = Path(found["celeba"]) if found.get("celeba") else None   # the CelebA they were asked on

    def of(self, exercise: str, name: str) -> dict:
        got = self.records.get(exercise, {}).get(name)
        return got if isinstance(got, dict) else {"error": _("no answer came back for this record")}


class Asking:
    """The fixture of an exercise with records: its records' cases, asked once and kept."""

    def __init__(self, exercise: str, target: Target | None, answers: RecordsFile | None = None, config=None):
        self.exercise, self.config = exercise, config
        self.target, self.answers = target, answers
        self.records = _records.load(locate().records_of(exercise))
        self._asked: dict[str, list[Case]] = {}

    def __repr__(self) -> str:
        return f"<records of {self.exercise!r}>"

    @property
    def _target(self):
        """What :func:`kata.harness.target.target_of` reads of a handle: the target the records are asked of here
        (its folder names the learner's lines in an explained error), or one without a folder (answers from a file)."""
        return self.target or _NO_TARGET

    def _record(self, name: str) -> _records.Record:
        if name not in self.records:
            raise KeyError(f"records/{self.exercise}.py has no record {name!r}")
        return self.records[name]

    def cases(self, name: str) -> list[Case]:
        """Every case of record ``name``."""
        rec = self._record(name)
        item = _CURRENT[0]
        read = ("kata_record", [f"{self.exercise}.{name}", list(rec.rests)])
        if item is not None and read not in item.user_properties:
            item.user_properties.append(read)
        if name not in self._asked:
            self._asked[name] = self._ask(rec)
        for case in self._asked[name]:   # each error the learner's code raised in the scenario the check reads
            if "error" in case.result:
                _met(str(case.result.get("kind")), case.result.get("raised_at"))
            if "caught" not in case.result:
                case.result["caught"] = _caught_in(case.result.get("data"))
            for kind, at in case.result["caught"]:
                _met(str(kind), at)
        return self._asked[name]

    def answer(self, name: str, *args):
        """The answer to the case of record ``name`` whose inputs are ``args``."""
        for case in self.cases(name):
            if case.args == args:
                return case.answer
        raise KeyError(f"records/{self.exercise}.py: {name} has no case {args!r}")

    def _ask(self, rec: _records.Record) -> list[Case]:
        if self.answers is not None:
            return self._read(rec.inputs(self.answers.seed, self.exercise), self.answers.of(self.exercise, rec.name))
        inputs = rec.inputs(SEED, self.exercise)   # what the checks read: drawn apart from those the module is given
        helper = self.config.stash.get(AHEAD, None) if self.config is not None and not rec.of_source else None
        ahead = helper.take(self.exercise, rec.name) if helper is not None else None
        if ahead is not None and ahead.get("inputs") == _records.digest(inputs):
            return self._read(inputs, ahead)   # asked by the run's helper (kata/harness/prefetch.py)
        found = self.asked_here(rec, keep=True)
        cases = []
        for args, result in zip(inputs, found["cases"]):
            if "exc" in result:
                result["tb"] = result["exc"].__traceback__
            cases.append(Case(args, result))
        return cases

    def asked_here(self, rec: _records.Record, keep: bool) -> dict:
        """Every case of ``rec`` asked of the target in this process (kata.records.ask_all; with ``keep``, each
        exception the module raised kept with its answer)."""
        module = files_of(self.target.path) if rec.of_source else self.target.module(self.exercise)
        tmp = self.config._tmp_path_factory.mktemp(f"records-{rec.name}") if self.config is not None else None
        ctx = _records.Context(self._accelerator() if rec.accelerator else None, tmp, lambda: celeba_of(self.config))
        with _records.using(ctx):
            return _records.ask_all(rec, module, SEED, self.exercise, keep=keep)

    def _accelerator(self):
        import torch

        chosen = _acc.accelerator_of(self.config)
        if not chosen.available:
            return None
        return _acc.install_if_simulated(self.config) if chosen.kind == "sim" else torch.device(chosen.kind)

    @staticmethod
    def _read(inputs: list[tuple], got: dict) -> list[Case]:
        if "cases" not in got:
            said = {k: got[k] for k in ("kind",) if k in got}
            return [Case(args, {"error": got.get("error", _("no answer")), **said}) for args in inputs]
        cases = got["cases"]
        if got.get("inputs") != _records.digest(inputs) or not isinstance(cases, list) or len(cases) != len(inputs):
            why = _("the answers were given to other inputs than the ones drawn for them")
            return [Case(args, {"error": why}) for args in inputs]
        return [Case(args, c if isinstance(c, dict) else {"error": _("not an answer")})
                for args, c in zip(inputs, cases)]


def celeba_of(config) -> Path:
    """The records' CelebA in this run (kata.records.CELEBA): the one the answers read from a file were asked on,
    else one drawn once per run (the ``celeba_root`` the checks share), in :func:`celeba_folder`."""
    if config is None:
        raise RuntimeError("no CelebA outside a run of the checks")
    if not hasattr(config, "_kata_celeba"):
        config._kata_celeba = _records.small_celeba(celeba_folder(config))
    return config._kata_celeba


def celeba_folder(config) -> Path:
    """Where this run's records' CelebA is, or is drawn when first used: chosen once per run (the answers' file is
    read once for it), before the run's helper is forked (kata/harness/prefetch.py), so both use one."""
    if not hasattr(config, "_kata_celeba_folder"):
        path = config.getoption("kata_records_from", None)
        named = RecordsFile(path).celeba if path else None
        config._kata_celeba_folder = named or config._tmp_path_factory.mktemp("celeba_root")
    return config._kata_celeba_folder


def asking_for(config, target: Target, exercise: str) -> Asking | None:
    """The fixture of ``exercise`` on ``target`` when it has records (None: its checks call the module)."""
    if not locate().records_of(exercise).is_file():
        return None
    path = config.getoption("kata_records_from", None)
    return Asking(exercise, None if path else target, RecordsFile(path) if path else None, config)
