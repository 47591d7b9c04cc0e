"""Checks for exercise 7, checkpoint: a model saved on the GPU opens on a laptop, and training resumes.

Every check saves a tiny run (the checks' tiny model, Adam, a few epochs on
fixed batches: no dropout, no shuffling, so every run is the same) with the
learner's `save_checkpoint`, and reads the file as a stranger's file should be
read, `torch.load(path, weights_only=True, map_location="cpu")`: it must hold
the model's and the optimizer's state_dicts as they were, the epoch as an int
and the four histories as lists of floats, however the learner arranged them
(kata.checks.checkpoints finds each by what it is). The checks that load use the
learner's `load_checkpoint` on a fresh model and optimizer, and compare training
resumed from the file with training that never stopped, step for step.

The checks marked `cuda` save on the accelerator (real or simulated). Two of
them open that file on a laptop: a fresh Python process without an accelerator
(kata.checks.elsewhere; one process for both, started once), where a file read
without map_location meets PyTorch's own error, as it does on a CPU-only
machine.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import pickle

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from kata.audit.payloads import KINDS as PAYLOADS
from kata.checks import lessons
from kata.checks.checkpoints import (
    EPOCH,
    HISTORY,
    file_problem,
    moved_problem,
    optimizer_difference,
    optimizer_state,
    read,
    state,
    with_hidden_code,
)
from kata.checks.elsewhere import NotRun, open_elsewhere
from kata.checks.messages import describe, explained_learner_errors, fail_if
from kata.harness.target import module_of
from kata.i18n import N_, _, say
from kata.records.doubles import fixed_batches, tiny_model, train_batches
from kata.records.history import History

MORE = 2   # epochs trained after a checkpoint is loaded
MOVE_ADVICE = N_("A checkpoint loads where the model is: move the model first (model.to(device)), map the file's "
                 "tensors there as they are read (map_location), then load the states.")


# --- a tiny run, saved and loaded by the learner's functions ----------------------------------------


def run_of(device=None, seed=0, epochs=EPOCH):
    """The checks' tiny model and its Adam, trained ``epochs`` epochs on fixed batches (on ``device``)."""
    model = tiny_model(seed)
    if device is not None:
        model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    train_batches(model, optimizer, fixed_batches(), epochs, device)
    return model, optimizer


def call_save(checkpoint, path, model, optimizer, epoch=EPOCH, history=HISTORY):
    __tracebackhide__ = True
    with explained_learner_errors(checkpoint, "save_checkpoint(path, model, optimizer, epoch, history)",
                                  _(MOVE_ADVICE)):
        checkpoint.save_checkpoint(path, model, optimizer, epoch, history)


def written(checkpoint, folder, device=None, epoch=EPOCH, history=HISTORY, name="run.pt"):
    """(path, model, optimizer, what the file holds): a tiny run saved by the learner, in a file that reads
    with weights_only=True (every check's verdict rests on one)."""
    __tracebackhide__ = True
    model, optimizer = run_of(device)
    path = folder / name
    call_save(checkpoint, path, model, optimizer, epoch, history)
    obj, problem = read(path)
    fail_if(problem)
    return path, model, optimizer, obj


def saved(checkpoint, folder, device=None, epoch=EPOCH, history=HISTORY, name="run.pt"):
    """The same, for a file that holds what the contract's checkpoint holds (the load checks rest on one:
    a wrong file fails them with the file check's own first line)."""
    __tracebackhide__ = True
    path, model, optimizer, obj = written(checkpoint, folder, device, epoch, history, name)
    fail_if(file_problem(obj, model, optimizer, epoch, history))
    return path, model, optimizer


def load_call(optimizer=True, device=None) -> str:
    args = ", optimizer" if optimizer else ""
    return f"load_checkpoint(path, model{args}{f', device={device}' if device is not None else ''})"


def call_load(checkpoint, path, model, optimizer=None, **kwargs):
    __tracebackhide__ = True
    who = load_call(optimizer is not None, kwargs.get("device"))
    with explained_learner_errors(checkpoint, who, _(MOVE_ADVICE)):
        if optimizer is None:
            return checkpoint.load_checkpoint(path, model, **kwargs)
        return checkpoint.load_checkpoint(path, model, optimizer, **kwargs)


def fresh(device=None):
    """Another tiny model (other initial weights) and a new Adam over it: what a resumed run starts from."""
    model = tiny_model(5)
    if device is not None:
        model.to(device)
    return model, torch.optim.Adam(model.parameters(), lr=0.001)


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


def model_problem(model, want: dict, call: str) -> str | None:
    for key, value in want.items():
        got = model.state_dict()[key].detach().cpu()
        if not torch.equal(got, value):
            return say(lessons.LOAD_MODEL_STATE, call=call, key=key, got=got.reshape(-1)[:3].tolist(),
                       want=value.reshape(-1)[:3].tolist())
    return None


def loaded_optimizer_problem(resumed_optimizer, optimizer, call: str) -> str | None:
    """The optimizer given to load_checkpoint holds the saved optimizer's state."""
    return optimizer_difference(optimizer_state(resumed_optimizer), optimizer_state(optimizer),
                                lessons.LOAD_OPTIMIZER_STATE, call=call)


def placement_problem(model, optimizer, call: str) -> str | None:
    """Each of Adam's state tensors that is shaped like its parameter lives where the parameter does."""
    for index, p in enumerate(q for group in optimizer.param_groups for q in group["params"]):
        for name, t in optimizer.state.get(p, {}).items():
            if isinstance(t, torch.Tensor) and t.shape == p.shape and t.device != p.device:
                return say(lessons.OPTIMIZER_STATE_LEFT_BEHIND, state=t.device, params=p.device, call=call,
                           name=repr(name), index=index)
    return None


def step_problem(model, optimizer, device, call: str) -> str | None:
    """The next training steps work, where the model is (after :func:`placement_problem` has spoken)."""
    try:
        train_batches(model, optimizer, fixed_batches(), MORE, device)
    except RuntimeError as err:
        error = f"{type(err).__name__}: {err}"
        return placement_problem(model, optimizer, call) or say(lessons.NEXT_STEP_FAILED, call=call, error=error)
    return None


def resume_problem(checkpoint, folder, device=None) -> str | None:
    """Training resumed from the learner's checkpoint takes the steps of training that never stopped."""
    __tracebackhide__ = True
    path, model, optimizer = saved(checkpoint, folder, device)
    at_save, optimizer_at_save = state(model), optimizer_state(optimizer)
    train_batches(model, optimizer, fixed_batches(), MORE, device)       # the run that never stopped
    resumed, resumed_optimizer = fresh(device)
    call = load_call(True)
    fail_if(returned_problem(call_load(checkpoint, path, resumed, resumed_optimizer), EPOCH, HISTORY))
    problem = (model_problem(resumed, at_save, call)
               or optimizer_difference(optimizer_state(resumed_optimizer), optimizer_at_save,
                                       lessons.LOAD_OPTIMIZER_STATE, call=call)
               or step_problem(resumed, resumed_optimizer, device, call))
    if problem:
        return problem
    for (name, want), got in zip(model.named_parameters(), resumed.parameters()):
        gap = (got.detach().cpu() - want.detach().cpu()).abs().max().item()
        if gap > (0 if device is None else 1e-7):
            return say(lessons.RESUME_DIFFERS, epochs=MORE, name=name, gap=gap)
    return None


# --- what save_checkpoint writes ----------------------------------------------------------------


@pytest.mark.audit("file.readable")
def test_save_checkpoint_writes_one_file_that_loads_with_weights_only(checkpoint, tmp_path):
    written(checkpoint, tmp_path)
    others = sorted(p.name for p in tmp_path.iterdir() if p.name != "run.pt")
    assert not others, say("save_checkpoint(path, ...) writes one file, at path: torch.save(..., path) of "
                           "everything the checkpoint holds\n  it also wrote {others}", others=others)


@pytest.mark.audit("file.model")
def test_the_checkpoint_holds_the_models_state_dict_as_it_was(checkpoint, tmp_path):
    _path, model, optimizer, obj = written(checkpoint, tmp_path)
    fail_if(file_problem(obj, model, optimizer, EPOCH, HISTORY, parts=("model",)))


@pytest.mark.audit("file.optimizer")
def test_the_checkpoint_holds_the_optimizers_state_dict_as_it_was(checkpoint, tmp_path):
    _path, model, optimizer, obj = written(checkpoint, tmp_path)
    fail_if(file_problem(obj, model, optimizer, EPOCH, HISTORY, parts=("optimizer",)))


@pytest.mark.audit("file.epoch")
def test_the_checkpoint_holds_the_epoch_as_an_int(checkpoint, tmp_path):
    _path, model, optimizer, obj = written(checkpoint, tmp_path)
    fail_if(file_problem(obj, model, optimizer, EPOCH, HISTORY, parts=("epoch",)))


def history_of(kind: str, device=None) -> History:
    """HISTORY with its entries of one kind (as train gives them: a named tuple of four lists)."""
    import numpy as np

    make = {"floats": float,
            "cpu_tensors": lambda v: torch.tensor(v, device=device),
            "grad_tensors": lambda v: torch.tensor(v, requires_grad=True) * 1.0,
            "numpy": np.float64}[kind]
    return History(*[[make(v) for v in h] for h in HISTORY])


@pytest.mark.parametrize("kind", ["floats", "cpu_tensors", "grad_tensors", "numpy"])
@pytest.mark.audit("file.history.{kind}")
def test_the_checkpoint_holds_the_histories_as_lists_of_floats(checkpoint, tmp_path, kind):
    history = history_of(kind)
    _path, model, optimizer, obj = written(checkpoint, tmp_path, history=history)
    fail_if(file_problem(obj, model, optimizer, EPOCH, history, parts=("history",)))


# --- what load_checkpoint restores --------------------------------------------------------------


@pytest.mark.audit("load.returns", "load.model")
def test_load_checkpoint_restores_the_model_in_place_and_returns_the_epoch_and_history(checkpoint, tmp_path):
    path, model, _optimizer = saved(checkpoint, tmp_path)
    resumed, resumed_optimizer = fresh()
    result = call_load(checkpoint, path, resumed, resumed_optimizer)
    fail_if(returned_problem(result, EPOCH, HISTORY))
    fail_if(model_problem(resumed, state(model), load_call(True)))


@pytest.mark.audit("load.optimizer")
def test_load_checkpoint_restores_the_optimizers_state(checkpoint, tmp_path):
    path, _model, optimizer = saved(checkpoint, tmp_path)
    resumed, resumed_optimizer = fresh()
    fail_if(returned_problem(call_load(checkpoint, path, resumed, resumed_optimizer), EPOCH, HISTORY))
    fail_if(loaded_optimizer_problem(resumed_optimizer, optimizer, load_call(True)))


@pytest.mark.audit("load.model_only")
def test_load_checkpoint_without_an_optimizer_restores_the_model_alone(checkpoint, tmp_path):
    path, model, _optimizer = saved(checkpoint, tmp_path)
    resumed, _resumed_optimizer = fresh()
    fail_if(returned_problem(call_load(checkpoint, path, resumed), EPOCH, HISTORY))
    fail_if(model_problem(resumed, state(model), load_call(False)))


@pytest.mark.audit("resume")
def test_training_resumed_from_a_checkpoint_takes_the_steps_of_training_that_never_stopped(checkpoint, tmp_path):
    fail_if(resume_problem(checkpoint, tmp_path))


@pytest.mark.audit("refuses")
def test_a_checkpoint_that_would_run_code_is_refused(checkpoint, tmp_path):
    for kind in PAYLOADS:   # every way of running code torch.load(weights_only=True) refuses, not one known payload
        folder = tmp_path / kind
        folder.mkdir()
        path, _model, _optimizer = saved(checkpoint, folder)
        marker = folder / "this-file-ran-code.txt"
        with_hidden_code(path, marker, kind)
        resumed, resumed_optimizer = fresh()
        before = state(resumed)
        call = load_call(True)
        try:
            result = checkpoint.load_checkpoint(path, resumed, resumed_optimizer)
        except pickle.UnpicklingError:
            result = None
        except NotImplementedError:
            raise
        except Exception as err:  # noqa: BLE001 - another error than torch.load's: said below
            error = f"{type(err).__name__}: {str(err)[:300]}"
            fail_if(say(lessons.RUNS_CODE, marker=marker.name) if marker.exists() else
                    say(lessons.REFUSED_OTHERWISE, call=call, error=error))
        else:
            fail_if(say(lessons.RUNS_CODE, marker=marker.name) if marker.exists() else
                    say(lessons.NOT_REFUSED, call=call, returned=describe(result)))
        fail_if(say(lessons.RUNS_CODE, marker=marker.name) if marker.exists() else None)
        assert all(torch.equal(v, state(resumed)[k]) for k, v in before.items()), _(
            "load_checkpoint changed the model before it refused the file: read the file first, then load")


@given(epoch=st.integers(0, 10_000), n=st.integers(0, 4),
       values=st.lists(st.floats(0, 10, allow_nan=False), min_size=16, max_size=16, unique=True))
@pytest.mark.audit("round_trip")
def test_any_epoch_and_history_come_back_as_they_were_saved(checkpoint, tmp_path_factory, epoch, n, values):
    history = History(*[values[i * 4:i * 4 + n] for i in range(4)])
    folder = tmp_path_factory.mktemp("round-trip")
    path, model, optimizer, obj = written(checkpoint, folder, epoch=epoch, history=history)
    fail_if(file_problem(obj, model, optimizer, epoch, history, parts=("epoch", "history")))
    resumed, resumed_optimizer = fresh()
    fail_if(returned_problem(call_load(checkpoint, path, resumed, resumed_optimizer), epoch, history))


# --- on an accelerator (real CUDA, MPS, or the simulated one) ------------------------------------


@pytest.mark.cuda
@pytest.mark.audit("device.file")
def test_saved_on_the_accelerator_the_checkpoint_keeps_each_tensor_where_it_lived(checkpoint, accelerator, tmp_path):
    path, model, optimizer, _obj = written(checkpoint, tmp_path, accelerator)
    fail_if(moved_problem(path, model, optimizer, accelerator))


@pytest.mark.cuda
@pytest.mark.audit("device.history")
def test_the_seeds_history_of_device_tensors_is_saved_as_floats(checkpoint, accelerator, tmp_path):
    # The seed's train: losses as floats, accuracies as 0-d tensors on the device.
    history = History(HISTORY[0], HISTORY[1], *[[torch.tensor(v, device=accelerator) for v in h] for h in HISTORY[2:]])
    _path, model, optimizer, obj = written(checkpoint, tmp_path, accelerator, history=history)
    fail_if(file_problem(obj, model, optimizer, EPOCH, history, parts=("history",)))


@pytest.mark.cuda
@pytest.mark.audit("device_none")
def test_device_none_loads_onto_the_models_own_device(checkpoint, accelerator, tmp_path):
    path, model, optimizer = saved(checkpoint, tmp_path)
    resumed, resumed_optimizer = fresh(accelerator)
    call = load_call(True)
    fail_if(returned_problem(call_load(checkpoint, path, resumed, resumed_optimizer), EPOCH, HISTORY))
    after = {p.device.type for p in resumed.parameters()}
    if after != {accelerator.type}:
        fail_if(say(lessons.LOAD_DEVICE_NONE, call=call, before=accelerator, after=", ".join(sorted(after))))
    fail_if(model_problem(resumed, state(model), call) or loaded_optimizer_problem(resumed_optimizer, optimizer, call)
            or placement_problem(resumed, resumed_optimizer, call)
            or step_problem(resumed, resumed_optimizer, accelerator, call))


@pytest.mark.cuda
@pytest.mark.audit("device.moved")
def test_a_given_device_takes_the_model_there_first_and_the_optimizer_state_beside_it(checkpoint, accelerator,
                                                                                       tmp_path):
    path, model, optimizer = saved(checkpoint, tmp_path)
    resumed, resumed_optimizer = fresh()
    call = load_call(True, accelerator)
    fail_if(returned_problem(call_load(checkpoint, path, resumed, resumed_optimizer, device=accelerator), EPOCH,
                             HISTORY))
    after = {p.device.type for p in resumed.parameters()}
    if after != {accelerator.type}:
        fail_if(say(lessons.LOAD_MOVES_THE_MODEL, call=call, before="cpu", after=", ".join(sorted(after))))
    stepped = [p for group in resumed_optimizer.param_groups for p in group["params"]]
    assert all(any(p is q for q in resumed.parameters()) for p in stepped), _(
        "after load_checkpoint the optimizer no longer holds the model's parameters: move the caller's model in "
        "place (Module.to keeps its Parameter objects), never a copy of it")
    fail_if(model_problem(resumed, state(model), call) or loaded_optimizer_problem(resumed_optimizer, optimizer, call)
            or placement_problem(resumed, resumed_optimizer, call)
            or step_problem(resumed, resumed_optimizer, accelerator, call))


@pytest.mark.cuda
@pytest.mark.audit("device.resume")
def test_training_resumed_on_the_accelerator_takes_the_steps_of_training_that_never_stopped(checkpoint,
                                                                                             accelerator, tmp_path):
    fail_if(resume_problem(checkpoint, tmp_path, accelerator))


# --- on a laptop: a fresh process without an accelerator ------------------------------------------


class Laptop:
    """A file saved on the accelerator by the learner's save_checkpoint, opened by their load_checkpoint in
    a fresh process that has no accelerator: made once, on the first check that asks (its outcome, a
    failure or a skip included, is every asking check's)."""

    CALLS = {"load_checkpoint(path, model, optimizer)": None,
             "load_checkpoint(path, model, optimizer, device='cpu')": "cpu"}

    def __init__(self, folder):
        self.folder, self.found, self.raised = folder, None, None

    def __call__(self, checkpoint, accelerator) -> dict:
        __tracebackhide__ = True
        if self.found is None and self.raised is None:
            try:
                self.found = self._open(checkpoint, accelerator)
            except BaseException as exc:  # the outcome of every check that asks
                self.raised = exc
        if self.raised is not None:
            raise self.raised
        return self.found

    def _open(self, checkpoint, accelerator) -> dict:
        __tracebackhide__ = True
        if accelerator.type == "mps":
            pytest.skip(_("a fresh process can't be made without MPS (it can't be hidden): this check needs CUDA or "
                          "the simulated accelerator"))
        path, model, optimizer = saved(checkpoint, self.folder, accelerator, name="from-the-gpu.pt")
        fail_if(moved_problem(path, model, optimizer, accelerator))
        at_save, optimizer_at_save = state(model), optimizer_state(optimizer)
        train_batches(model, optimizer, fixed_batches(), MORE, accelerator)   # the run that never stopped
        file = getattr(module_of(checkpoint), "__file__", None)
        if not file:
            pytest.skip(_("this check opens your checkpoint in a fresh Python process, which can import a .py file "
                          "but not a notebook's functions: save them as exercises/checkpoint.py and run "
                          "`pytest exercises/checkpoint.py`"))
        from pathlib import Path

        try:
            found = open_elsewhere({"folder": str(Path(file).parent), "module": "checkpoint", "file": str(path),
                                    "seed": 5, "batches": {}, "epochs": MORE, "calls": self.CALLS})
        except NotRun as err:
            pytest.skip(say("this check needs a fresh Python process without an accelerator, and {reason}", reason=err))
        if found["cuda"] or found["simulated"]:
            pytest.skip(_("the fresh process still had an accelerator (CUDA_VISIBLE_DEVICES was not obeyed)"))
        return {**found, "path": path, "at_save": at_save, "optimizer_at_save": optimizer_at_save,
                "uninterrupted": {name: p.detach().cpu() for name, p in model.named_parameters()}}


@pytest.fixture(scope="module")
def laptop(tmp_path_factory, checkpoint):
    # One laptop per module under check: the project's own run checks solutions/ and the stubs in one process,
    # and a laptop shared by both would hand the stubs the solutions' outcome.
    del checkpoint
    return Laptop(tmp_path_factory.mktemp("laptop"))


# Where an error of the fresh process was raised, when it was not in the learner's file.
A_LIBRARY_CALL = N_("a library call")


def elsewhere_problem(checkpoint, found: dict, call: str) -> str | None:
    """The learner's load_checkpoint raised nothing on the laptop (a stub's NotImplementedError is raised
    here, in this process, so that it reads as every stub does)."""
    error = found["calls"][call]["error"]
    if error is None:
        return None
    if error["not_written"]:
        checkpoint.load_checkpoint(found["path"], tiny_model(5))
    text = f"{error['type']}: {error['message']}"
    if "Attempting to deserialize object on a CUDA device" in error["message"]:
        return say(lessons.ELSEWHERE_NEEDS_MAP_LOCATION, error=text, where=error["where"] or _(A_LIBRARY_CALL),
                   source=error["source"])
    return say(lessons.ELSEWHERE_FAILED, call=call, where=error["where"] or _(A_LIBRARY_CALL), source=error["source"],
               error=text)


@pytest.mark.cuda
@pytest.mark.audit("elsewhere.opens", observed=N_("in a fresh process without an accelerator: that load_checkpoint "
                                                   "opened the file"))
def test_a_machine_without_a_gpu_opens_a_checkpoint_saved_on_one(checkpoint, accelerator, laptop):
    found = laptop(checkpoint, accelerator)
    for call in Laptop.CALLS:
        fail_if(elsewhere_problem(checkpoint, found, call))
        problem = returned_problem(_value(found["calls"][call]["returned"]), EPOCH, HISTORY)
        fail_if(problem and problem + "\n" + say(lessons.ELSEWHERE_PLAIN, what=call))
    assert "Attempting to deserialize object on a CUDA device" in found["torch_load"], say(
        "without map_location, PyTorch's own torch.load(path) opens this file on a machine without a GPU: it holds "
        "no tensor saved from one\n  the fresh process's torch.load(path) gave: {gave}",
        gave=found["torch_load"] or _("no error"))


def laptop_problem(found: dict, call: str) -> str | None:
    """What the learner's load_checkpoint left on the laptop: the returned values, the model's state on the
    CPU, the optimizer's state beside it, and training that goes on as the run that never stopped."""
    got = found["calls"][call]
    where = "\n" + say(lessons.ELSEWHERE_PLAIN, what=call)
    problem = returned_problem(_value(got["returned"]), EPOCH, HISTORY)
    if problem:
        return problem + where
    if set(got["devices"]) != {"cpu"}:
        return say(lessons.LOAD_DEVICE_NONE, call=call, before="cpu", after=", ".join(sorted(set(got["devices"])))) \
            + where
    for key, value in found["at_save"].items():
        if not torch.equal(got["state"][key], value):
            return say(lessons.LOAD_MODEL_STATE, call=call, key=key, got=got["state"][key].reshape(-1)[:3].tolist(),
                       want=value.reshape(-1)[:3].tolist()) + where
    problem = optimizer_difference(got["optimizer_state"], found["optimizer_at_save"], lessons.LOAD_OPTIMIZER_STATE,
                                   call=call)
    if problem:
        return problem + where
    for index, entry in enumerate(got["optimizer"]):
        for name, t in entry["state"].items():
            if t["device"] != entry["param"] and t["value"].dim() > 0:
                return say(lessons.OPTIMIZER_STATE_LEFT_BEHIND, state=t["device"], params=entry["param"], call=call,
                           name=repr(name), index=index) + where
    if got["step_error"] is not None:
        error = got["step_error"]
        text = f"{error['type']}: {error['message'][:300]}"
        return say(lessons.NEXT_STEP_FAILED, call=call, error=text) + where
    for (name, want), after in zip(found["uninterrupted"].items(), got["after"]):
        gap = (after - want).abs().max().item()
        if gap > 1e-5:
            return say(lessons.RESUME_DIFFERS, epochs=MORE, name=name, gap=gap) + where
    return None


@pytest.mark.cuda
@pytest.mark.audit("elsewhere", observed=N_("in a fresh process without an accelerator: what the model and optimizer "
                                              "held"))
def test_on_that_machine_the_state_lands_on_the_cpu_and_training_continues(checkpoint, accelerator, laptop):
    found = laptop(checkpoint, accelerator)
    for call in Laptop.CALLS:
        fail_if(elsewhere_problem(checkpoint, found, call))
    for call in Laptop.CALLS:
        fail_if(laptop_problem(found, call))


def _value(plain):
    """A value the fresh process described (kata.checks.elsewhere) as a Python value again."""
    kind = plain.get("kind")
    if kind in ("list", "tuple", "namedtuple"):
        items = [_value(v) for v in plain["items"]]
        return items if kind == "list" else tuple(items)
    if kind in ("int", "float", "bool", "str", "NoneType", "tensor"):
        return plain["value"]
    return plain.get("value")
