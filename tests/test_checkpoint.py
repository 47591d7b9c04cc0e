"""Checks for exercise 7, checkpoint: a model saved on the GPU opens on a laptop, and training resumes.

Each check reads the answers of a record (records/checkpoint.py): a tiny run (the
tiny model of a drawn seed, Adam, a few epochs on fixed batches: no dropout, no
shuffling, so every run is the same) saved with the learner's `save_checkpoint`,
and the file read as a stranger's file should be read, `torch.load(path,
weights_only=True, map_location="cpu")`: it must hold the model's and the
optimizer's state_dicts as they were, the epoch as an int and the four histories
as lists of floats, however the learner arranged them (kata.checks.checkpoints
finds each by what it is). The checks that load read what the learner's
`load_checkpoint` left in a fresh model and optimizer, and compare training
resumed from the file with training that never stopped, step for step: the checks
train that run themselves, on the CPU.

The checks marked `cuda` read runs saved on the accelerator (real or simulated).
Two of them read what a laptop found, a fresh Python process without an
accelerator (kata.records.elsewhere; one process for both, started once), where a
file read without map_location meets PyTorch's own error, as it does on a
CPU-only machine.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import functools

import pytest

from kata.checks import lessons
from kata.checks.checkpoints import (
    file_problem,
    history_refused,
    moved_problem,
    optimizer_difference,
    optimizer_state,
    read_problem,
    same,
    state,
)
from kata.checks.messages import describe, explained_learner_errors, fail_if
from kata.i18n import N_, _, say
from kata.records.doubles import MORE, fixed_batches, history_of, tiny_run, train_batches
from kata.records.history import HISTORY, History

ATOL = 1e-5   # a run on the accelerator, against the checks' own on the CPU
SAVE = "save_checkpoint(path, model, optimizer, epoch, history)"
MOVE_ADVICE = N_("A checkpoint loads where the model is: move the model first (model.to(device)), map the file's "
                 "tensors there as they are read (map_location), then load the states.")


# --- the records' answers, and the run they saved ----------------------------------------------------


@functools.cache
def run(seed: int):
    """The records' tiny run of ``seed``, trained here on the CPU: the model's and the optimizer's states when it
    was saved, and its parameters after MORE more epochs (the run that never stopped)."""
    model, optimizer = tiny_run(seed)
    at_save = state(model), optimizer_state(optimizer)
    train_batches(model, optimizer, fixed_batches(), MORE)
    return (*at_save, {name: p.detach().clone() for name, p in model.named_parameters()})


def explained(checkpoint, who: str):
    return explained_learner_errors(checkpoint, who, _(MOVE_ADVICE))


def answer(checkpoint, record: str, kind=None, who: str = SAVE):
    """The inputs and the answer of ``record``'s case (of ``kind``), the learner's errors explained as ``who``'s."""
    __tracebackhide__ = True
    case = next(c for c in checkpoint.cases(record) if kind in (None, c.args[-1]))
    with explained(checkpoint, who):
        return case.args, case.answer


def written(checkpoint, record="run", kind="floats", whole=False, atol=0.0, name="run.pt"):
    """(inputs, answer) of a tiny run saved by the learner at ``name``, in a file that reads with weights_only=True
    (every check's verdict rests on one); ``whole``: that holds what the contract's checkpoint holds (the load checks
    rest on one: a wrong file fails them with the file check's own first line)."""
    __tracebackhide__ = True
    args, found = answer(checkpoint, record, kind)
    fail_if(read_problem(found["read"], name)
            or (file_problem(found["read"]["file"], *run(args[0])[:2], args[1], HISTORY, atol=atol) if whole else None))
    return args, found


def load_call(optimizer=True, device=None) -> str:
    args = ", optimizer" if optimizer else ""
    return f"load_checkpoint(path, model{args}{f', device={device}' if device is not None else ''})"


def loaded(checkpoint, record, kind, device=None, atol=0.0):
    """(seed, answer, call) of a load, after the file check of the run it loads (its own first line)."""
    __tracebackhide__ = True
    written(checkpoint, "on_accelerator" if kind == "resume" else "run", whole=True, atol=atol)
    call = load_call(kind != "model only", device)
    (seed, epoch, _kind), found = answer(checkpoint, record, kind, call)
    fail_if(returned_problem(found["returned"], epoch, HISTORY))
    return seed, found, call


def shown(history) -> str:
    if isinstance(history, (tuple, list)) and all(isinstance(h, list) for h in history):
        return "(" + ", ".join("[" + ", ".join(repr(v) if type(v) is float else describe(v) for v in h) + "]"
                               for h in history) + ")"
    return describe(history)


def returned_problem(result, epoch, history) -> str | None:
    """load_checkpoint returned (epoch, history) as they were saved: an int and four lists of floats."""
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        return say("load_checkpoint returns a tuple (epoch, history)\n  it returned {result}", result=describe(result))
    got_epoch, got_history = result
    if type(got_epoch) is not int or got_epoch != epoch:
        return say(lessons.LOAD_RETURNS_EPOCH, got=describe(got_epoch), want=epoch)
    want = [[float(v) for v in h] for h in history]
    ok = (isinstance(got_history, (tuple, list)) and len(got_history) == 4
          and all(isinstance(h, list) and all(type(v) is float for v in h) for h in got_history)
          and [list(h) for h in got_history] == want)
    return None if ok else say(lessons.LOAD_RETURNS_HISTORY, got=shown(got_history), want=shown(want))


def model_problem(got: dict, want: dict, call: str, atol=0.0) -> str | None:
    for key, value in want.items():
        if not same(got[key], value, atol):
            return say(lessons.LOAD_MODEL_STATE, call=call, key=key, got=got[key].reshape(-1)[:3].tolist(),
                       want=value.reshape(-1)[:3].tolist())
    return None


def placement_problem(found: dict, call: str) -> str | None:
    """Each of Adam's state tensors that is shaped like its parameter lives where the parameter does."""
    for index, (param, states) in enumerate(found["placement"]):
        for name, device in states.items():
            if device != param:
                return say(lessons.OPTIMIZER_STATE_LEFT_BEHIND, state=device, params=param, call=call,
                           name=repr(name), index=index)
    return None


def devices_problem(devices, want: str, lesson: str, call: str, before) -> str | None:
    """The model's parameters are all on ``want`` (a device type) after the load; ``before``: where it was."""
    return None if set(devices) == {want} else say(lesson, call=call, before=before, after=", ".join(devices))


def step_problem(found: dict, call: str, before=None) -> str | None:
    """The next training steps work, where the model is (after :func:`placement_problem` has spoken); where they
    fail and a load without a device (``before``: where the model was) left the model elsewhere, that says why."""
    if found.get("step_error") is None:
        return None
    left = devices_problem(found["devices"], before.type, lessons.LOAD_DEVICE_NONE, call, before) if before else None
    return left or placement_problem(found, call) or say(lessons.NEXT_STEP_FAILED, call=call, error=found["step_error"])


def restored_problem(seed, found: dict, call: str, atol=0.0, placed=True, before=None) -> str | None:
    """After the load: the states as saved; where ``placed``, :func:`placement_problem`; the model's own Parameter
    objects kept, those the optimizer holds (before the next steps, which would update others); :func:`step_problem`."""
    return (model_problem(found["state"], run(seed)[0], call, atol)
            or optimizer_difference(found["optimizer"], run(seed)[1], lessons.LOAD_OPTIMIZER_STATE, atol, call=call)
            or (placement_problem(found, call) if placed else None)
            or (say(lessons.LOAD_REPLACED_PARAMETERS, call=call, names=", ".join(found["replaced"]))
                if found["replaced"] else None)
            or step_problem(found, call, before))


def resume_problem(seed, found: dict, call: str, atol=0.0, before=None, placed=False) -> str | None:
    """Training resumed from the learner's checkpoint (of a model that was on ``before``, loaded without a device)
    takes the steps of training that never stopped."""
    problem = restored_problem(seed, found, call, atol, placed, before)
    if problem:
        return problem
    for (name, want), got in zip(run(seed)[2].items(), found["after"]):
        gap = (got - want).abs().max().item()
        if gap > atol:
            return say(lessons.RESUME_DIFFERS, epochs=MORE, name=name, gap=gap)
    return None


# --- what save_checkpoint writes ----------------------------------------------------------------


def test_save_checkpoint_writes_one_file_that_loads_with_weights_only(checkpoint):
    others = written(checkpoint)[1]["others"]
    assert not others, say("save_checkpoint(path, ...) writes one file, at path: torch.save(..., path) of "
                           "everything the checkpoint holds\n  it also wrote {others}", others=others)


def file_part(checkpoint, part: str, kind="floats", record="run", device=None):
    """The part of the file a check reads, as it was saved (the run's states, the epoch, the histories)."""
    __tracebackhide__ = True
    if part == "history" and kind != "floats":   # a file refused for the history's entries, saved as given
        fail_if(history_refused(answer(checkpoint, record, kind)[1]["read"], history_of(kind, device),
                                answer(checkpoint, record, "floats")[1]["read"], "run.pt"))
    (seed, epoch, _kind), found = written(checkpoint, record, kind)
    fail_if(file_problem(found["read"]["file"], *run(seed)[:2], epoch, history_of(kind, device), parts=(part,)))


def test_the_checkpoint_holds_the_models_state_dict_as_it_was(checkpoint):
    file_part(checkpoint, "model")


def test_the_checkpoint_holds_the_optimizers_state_dict_as_it_was(checkpoint):
    file_part(checkpoint, "optimizer")


def test_the_checkpoint_holds_the_epoch_as_an_int(checkpoint):
    file_part(checkpoint, "epoch")


@pytest.mark.parametrize("kind", ["floats", "cpu_tensors", "grad_tensors", "numpy"])
def test_the_checkpoint_holds_the_histories_as_lists_of_floats(checkpoint, kind):
    file_part(checkpoint, "history", kind)


# --- what load_checkpoint restores --------------------------------------------------------------


def test_load_checkpoint_restores_the_model_in_place_and_returns_the_epoch_and_history(checkpoint):
    seed, found, call = loaded(checkpoint, "run", "load")
    fail_if(model_problem(found["state"], run(seed)[0], call))


def test_load_checkpoint_restores_the_optimizers_state(checkpoint):
    seed, found, call = loaded(checkpoint, "run", "load")
    fail_if(optimizer_difference(found["optimizer"], run(seed)[1], lessons.LOAD_OPTIMIZER_STATE, call=call))


def test_load_checkpoint_without_an_optimizer_restores_the_model_alone(checkpoint):
    seed, found, call = loaded(checkpoint, "run", "model only")
    fail_if(model_problem(found["state"], run(seed)[0], call))


def test_training_resumed_from_a_checkpoint_takes_the_steps_of_training_that_never_stopped(checkpoint):
    fail_if(resume_problem(*loaded(checkpoint, "run", "load")))


def test_a_checkpoint_that_would_run_code_is_refused(checkpoint):
    # Every way of running code torch.load(weights_only=True) refuses, not one known payload.
    written(checkpoint, whole=True)
    call = load_call(True)
    (_seed, _epoch, hidden), found = answer(checkpoint, "refuses", who=call)
    for (_kind, marker), got in zip(hidden, found, strict=True):
        ran = say(lessons.RUNS_CODE, marker=marker) if got["ran"] else None
        wrong = (say(lessons.NOT_REFUSED, call=call, returned=describe(got["returned"])) if got["error"] is None
                 else None if got["refused"] else say(lessons.REFUSED_OTHERWISE, call=call, error=got["error"]))
        fail_if(ran or wrong)   # ran first; then not refused, or refused with another error than torch.load's
        assert got["unchanged"], _(
            "load_checkpoint changed the model before it refused the file: read the file first, then load")


def test_any_epoch_and_history_come_back_as_they_were_saved(checkpoint):
    written(checkpoint)
    cases = iter(checkpoint.cases("round_trip"))
    for save, load in zip(cases, cases):   # each drawn epoch and history: saved, then loaded
        seed, epoch, n, values, _kind = save.args
        history = History(*[values[i * 4:i * 4 + n] for i in range(4)])
        with explained(checkpoint, SAVE):
            found = save.answer
        fail_if(read_problem(found, "run.pt")
                or file_problem(found["file"], *run(seed)[:2], epoch, history, parts=("epoch", "history")))
        with explained(checkpoint, load_call(True)):
            fail_if(returned_problem(load.answer, epoch, history))


# --- on an accelerator (real CUDA, MPS, or the simulated one) ------------------------------------


@pytest.mark.cuda
def test_saved_on_the_accelerator_the_checkpoint_keeps_each_tensor_where_it_lived(checkpoint, accelerator):
    _args, found = written(checkpoint, "on_accelerator")
    fail_if(moved_problem(found["tags"], found["want"], accelerator, found["devices"]))


@pytest.mark.cuda
def test_the_seeds_history_of_device_tensors_is_saved_as_floats(checkpoint, accelerator):
    # The seed's train: losses as floats, accuracies as 0-d tensors on the device.
    file_part(checkpoint, "history", "seed", "on_accelerator", accelerator)


@pytest.mark.cuda
def test_device_none_loads_onto_the_models_own_device(checkpoint, accelerator):
    seed, found, call = loaded(checkpoint, "on_accelerator", "device=None")
    fail_if(devices_problem(found["devices"], accelerator.type, lessons.LOAD_DEVICE_NONE, call, accelerator)
            or restored_problem(seed, found, call, ATOL))


@pytest.mark.cuda
def test_a_given_device_takes_the_model_there_first_and_the_optimizer_state_beside_it(checkpoint, accelerator):
    seed, found, call = loaded(checkpoint, "on_accelerator", "device given", accelerator)
    fail_if(devices_problem(found["devices"], accelerator.type, lessons.LOAD_MOVES_THE_MODEL, call, "cpu")
            or restored_problem(seed, found, call, ATOL))


@pytest.mark.cuda
def test_training_resumed_on_the_accelerator_takes_the_steps_of_training_that_never_stopped(checkpoint, accelerator):
    fail_if(resume_problem(*loaded(checkpoint, "on_accelerator", "resume", atol=ATOL), ATOL, accelerator))


# --- on a laptop: a fresh process without an accelerator ------------------------------------------


@pytest.fixture
def laptop(accelerator):
    """Where a fresh process can be made (a check with this fixture has tests/conftest.py fork the laptops' server)."""
    if accelerator.type == "mps":
        pytest.skip(_("a fresh process can't be made without MPS (it can't be hidden): this check needs CUDA or "
                      "the simulated accelerator"))


def opened(checkpoint, accelerator):
    """(seed, epoch, the calls made, what the laptop found) for a file saved on the accelerator that holds the
    contract's checkpoint as it was saved there (the outcome, a failure or a skip included, is both laptop checks')."""
    __tracebackhide__ = True
    (seed, epoch, calls), found = written(checkpoint, "laptop", None, whole=True, atol=ATOL, name="from-the-gpu.pt")
    fail_if(moved_problem(found["tags"], found["want"], accelerator))
    if found.get("notebook"):
        pytest.skip(_("this check opens your checkpoint in a fresh Python process, which can import a .py file "
                      "but not a notebook's functions: save them as exercises/checkpoint.py and run "
                      "`pytest exercises/checkpoint.py`"))
    if "laptop" not in found:
        pytest.skip(say("this check needs a fresh Python process without an accelerator, and {reason}",
                        reason=found["not_run"]))
    if found["laptop"]["cuda"] or found["laptop"]["simulated"]:
        pytest.skip(_("the fresh process still had an accelerator (CUDA_VISIBLE_DEVICES was not obeyed)"))
    return seed, epoch, calls, found["laptop"]


def elsewhere_problem(found: dict, call: str) -> str | None:
    """The learner's load_checkpoint raised nothing on the laptop (a stub's NotImplementedError was raised by
    the record, in its own process, so that it reads as every stub does)."""
    error = found["calls"][call]["error"]
    if error is None:
        return None
    lesson = lessons.ELSEWHERE_FAILED
    if "Attempting to deserialize object on a CUDA device" in error["message"]:
        lesson = (lessons.ELSEWHERE_MAP_LOCATION_NONE if "map_location" in (error["source"] or "")   # given None
                  else lessons.ELSEWHERE_NEEDS_MAP_LOCATION)
    return say(lesson, call=call, where=error["where"] or _("a library call"), source=error["source"],
               error=f"{error['type']}: {error['message']}")


@pytest.mark.cuda
def test_a_machine_without_a_gpu_opens_a_checkpoint_saved_on_one(checkpoint, accelerator, laptop):
    seed, epoch, calls, found = opened(checkpoint, accelerator)
    for call in calls:
        fail_if(elsewhere_problem(found, call) or laptop_problem(found, seed, epoch, call, restored=False))
    assert "Attempting to deserialize object on a CUDA device" in found["torch_load"], say(
        "without map_location, PyTorch's own torch.load(path) opens this file on a machine without a GPU: it holds "
        "no tensor saved from one\n  the fresh process's torch.load(path) gave: {gave}",
        gave=found["torch_load"] or _("no error"))


def laptop_problem(found: dict, seed: int, epoch: int, call: str, restored=True) -> str | None:
    """What the learner's load_checkpoint left on the laptop: the returned values; where ``restored``, the model's
    state on the CPU, the optimizer's state beside it, and training that goes on as the run that never stopped."""
    got = found["calls"][call]
    problem = (returned_problem(got["returned"], epoch, HISTORY)
               or (devices_problem(got["devices"], "cpu", lessons.LOAD_DEVICE_NONE, call, "cpu")
                   or resume_problem(seed, got, call, ATOL, placed=True) if restored else None))
    return problem and problem + "\n" + say(lessons.ELSEWHERE_PLAIN, what=call)


@pytest.mark.cuda
def test_on_that_machine_the_state_lands_on_the_cpu_and_training_continues(checkpoint, accelerator, laptop):
    seed, epoch, calls, found = opened(checkpoint, accelerator)
    for call in calls:
        fail_if(elsewhere_problem(found, call))
    for call in calls:
        fail_if(laptop_problem(found, seed, epoch, call))

