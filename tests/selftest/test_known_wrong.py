"""Known-wrong implementations must fail the checks written against them.

Each mutant is the reference solution with one mistake a learner makes, made
by a text substitution (kata.checks.mutants). The named checks are run on it by
pytest itself (`pytest --target MUTANT tests/test_NAME.py -k ...`, in process),
and each must fail on an assertion: a check's own message, what a learner would
read. A check that crashes (an exception from the harness or a library, not an
assertion) does not count as catching the mistake. A mutant's optional
`message` is a regular expression that each failure of each named check must
match (searched in the failure's text): the check fails for the true reason. The
self-check (plain `pytest`) already shows that the unmodified solutions pass
these checks. A mutant that `needs` the accelerator to behave as CUDA does (NEEDS
below) is skipped, saying so, where the simulated one does not yet.

Under --slow every check of the exercise runs, once a session (the fixture `in_process`):
tests/selftest/test_records.py grades every mutant with `kata grade` (records asked in its sandbox, the
checks on the answers read from a file) and reads these same runs, to show that each check gets the same
verdict there.

A new exercise may come without known mistakes: the run says which exercises lack them.
"""

import re
import tomllib
from pathlib import Path

# What the checks import is imported here, before the inner runs: pytester's snapshot of
# sys.modules would drop it after the first run, and NumPy, torch and torchvision can't be
# imported twice in one process. (A plain `pytest` has them already, from collecting tests/.)
import hypothesis
import matplotlib.pyplot
import numpy
import PIL.Image
import pytest
import torch
import torchvision.transforms
from raising import unnamed

from kata import curriculum
from kata.checks.mutants import write_mutant
from kata.project import locate

pytest_plugins = ["pytester"]

# Held here so that they stay imported across the inner runs (see above).
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, PIL.Image, torch, torchvision.transforms)

# The mutants, as data: tests/selftest/known_wrong.toml.
MUTANTS = tomllib.loads((Path(__file__).with_name("known_wrong.toml")).read_text())["mutant"]


def _cpu_0d_output_refused() -> str | None:
    """None where an in-place op with a device tensor refuses a 0-d CPU tensor as its output, as CUDA
    does (`s = torch.zeros(()); s += t_on_device`); else why the mutant can't be told."""
    if torch.cuda.is_available():
        return None
    from kata import sim

    try:
        device = sim.install()
    except RuntimeError as err:
        return f"no accelerator to try it on ({err})"
    total = torch.zeros(())
    try:
        total += torch.ones(2, device=device).sum()
    except RuntimeError:
        return None
    return ("the simulated accelerator still takes `cpu_0d += device_tensor` silently, where CUDA raises "
            "'Expected all tensors to be on the same device' (issue #18 makes it refuse)")


def _copy_in_flight_reads_nan() -> str | None:
    """None where the checks' accelerator is the simulated one, whose non_blocking copy to the host reads NaN
    until the next sync (kata.sim._syncs.defer); else why the mutant can't be told."""
    if torch.cuda.is_available():
        return ("the checks run on CUDA, where a non_blocking copy to the host read before a sync holds whatever its "
                "memory held (the right numbers, if the device was done by then)")
    return None


# What a mutant may need of the accelerator: name -> a probe (None: it behaves so; else why not).
NEEDS = {"cpu-0d-output": _cpu_0d_output_refused, "copy-in-flight-reads-nan": _copy_in_flight_reads_nan}


@pytest.mark.parametrize("name", curriculum.names())
def test_each_exercise_has_its_known_mistakes(name):
    # A new exercise may come without them: the run says so (a skip with its reason), never a failure.
    if not any(m["exercise"] == name for m in MUTANTS):
        pytest.skip(f"{name} has no known-wrong implementation in known_wrong.toml: nothing shows that its checks "
                    "catch a learner's mistake, each with its true reason")


def test_every_need_of_a_mutant_is_known():
    unknown = {m["mistake"]: m["needs"] for m in MUTANTS if m.get("needs") not in (None, *NEEDS)}
    assert not unknown, f"known_wrong.toml: these mutants need what no probe here tells: {unknown}"


@pytest.mark.parametrize(
    "exercise, mistake, edits, failing, message, needs",
    [pytest.param(m["exercise"], m["mistake"], [(e["old"], e["new"]) for e in m["edit"]], m["checks"],
                  m.get("message"), m.get("needs"), id=f"{m['exercise']}: {m['mistake']}") for m in MUTANTS])
def test_known_wrong_implementation_fails_its_checks(exercise, mistake, edits, failing, message, needs, tmp_path,
                                                     pytester, in_process):
    missing = NEEDS[needs]() if needs in NEEDS else None
    if missing is not None:
        pytest.skip(f"this mistake shows only where {needs} behaves as on CUDA: {missing}")
    run = in_process.verdicts(pytester, write_mutant(tmp_path / "mutant", exercise, *edits), exercise, reads=failing)
    crashed, passed, untrue = [], [], []
    for name in failing:
        assert name in run.failures, f"the check {name} did not run on the mutant '{mistake}' (renamed or removed?)"
        failures = run.failures[name]
        crashed += [f"{name}: {f.line[:300]}" for f in failures if not f.asserted]
        if not any(f.asserted for f in failures):
            passed.append(name)
        if message is not None:
            untrue += [f"{name}: {leaf[:400]}" for f in failures for leaf in f.leaves if not re.search(message, leaf)]
    assert not crashed, (f"{exercise} with '{mistake}': these checks crashed instead of failing with a "
                         f"message (an assertion): " + "; ".join(crashed))
    assert not passed, f"{exercise} with '{mistake}' passed {passed}, which should catch it"
    assert not untrue, (f"{exercise} with '{mistake}': these failures do not give the true reason "
                        f"(/{message}/): " + "\n".join(untrue))
    # Each error its code raised in the run (raising.Escapes) has its line named in a failure of the run (of every check
    # of the exercise under --slow, else of those named), but what the reference raises too.
    said = [text for texts in run.said.values() for text in texts]
    silent = unnamed(run.escapes, set(), said) and unnamed(
        run.escapes, set(in_process.verdicts(pytester, locate().solutions, exercise).escapes), said)
    assert not silent, (f"{exercise} with '{mistake}': its code raised these errors, and no failure of its checks "
                        f"names the learner's line: " + "; ".join(silent))


@pytest.mark.parametrize(
    "exercise, mistake, edits, failing, message, needs",
    [pytest.param(m["exercise"], m["mistake"], [(e["old"], e["new"]) for e in m["edit"]], m["checks"],
                  m.get("message"), m.get("needs"), id=f"{m['exercise']}: {m['mistake']}") for m in MUTANTS])
def test_a_known_mistake_reads_as_one_cause(exercise, mistake, edits, failing, message, needs, tmp_path, pytester,
                                            in_process):
    """One mistake, one block, its lesson shown: the run's blocks (what pytest's terminal, `kata watch` and
    `kata.check` render) hold one cause, whose message gives the true reason. Under --slow, of every check of the
    exercise; else of the checks the mistake names."""
    missing = NEEDS[needs]() if needs in NEEDS else None
    if missing is not None:
        pytest.skip(f"this mistake shows only where {needs} behaves as on CUDA: {missing}")
    run = in_process.verdicts(pytester, write_mutant(tmp_path / "mutant", exercise, *edits), exercise, reads=failing)
    blocks = [b for b in run.blocks() if not b.todo]
    firsts = "\n".join(f"  {b.message.splitlines()[0][:160]}  ({len(b.checks)} checks)" for b in blocks)
    assert len(blocks) == 1, f"{exercise} with '{mistake}' reads as {len(blocks)} causes, one block each:\n{firsts}"
    assert message is None or re.search(message, blocks[0].message), (
        f"{exercise} with '{mistake}': its one block does not give the true reason (/{message}/):\n{firsts}")
