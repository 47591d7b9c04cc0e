"""Checks for exercise 1, devices: where tensors live, and what assignment does.

The seed's questions, as checks: which device a tensor or a model is on,
moving a whole nest of tensors without touching the original, turning tensors
into plain Python values on the host, and the `t.cpu()` trap (a CPU tensor's
`.cpu()` is the tensor itself, not a copy).

Without a GPU, the checks move tensors to PyTorch's `meta` device: a device
that is not the CPU (tensors there have a shape and dtype but no data), so a
tensor that was not moved is caught. Every message that names it says so. The
checks marked `cuda` run on a real or simulated accelerator.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

from collections import OrderedDict, defaultdict

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from torch import nn

from kata.checks.messages import describe, fail_if, numpy_refusal
from kata.checks.snapshots import change, snapshot
from kata.checks.strategies import Pair, nested_tensors, plain_leaves, tensors
from kata.i18n import N_, _, say

ELSEWHERE = torch.device("meta")  # a device that is not the CPU, on every machine
# Said wherever a message names it: a learner has never met the meta device.
META = N_("meta (PyTorch's `meta` device: tensors there have a shape and a dtype but no data; these checks use it as "
          "a device that is not the CPU, the way a GPU is, on any machine)")


NOT_MOVED = N_("a tensor was not moved: `t.to(device)` RETURNS the moved tensor and leaves t where it was, so the "
               "result must hold what .to returned; every tensor, however deep in lists, tuples and dicts\n"
               "  after {call}, {path} is {value}")
MODULE_DEVICE = N_("device_of(model) must say where the model's parameters are: a module lives where its first "
                   "parameter is (else its first buffer; None for a module that holds no tensors)\n"
                   "  {case}, device_of(model) gave {got}")


# 0-d tensors of each dtype kind but float, first: each becomes its own Python type (one search may miss them).
INTEGERS = [torch.tensor(7), (torch.tensor(-3, dtype=torch.int32), torch.tensor(True)), {"n": torch.tensor(12)}]


def kind(value) -> str:
    """A container's type, or a leaf as describe() says it (never an internal class name)."""
    return type(value).__name__ if isinstance(value, (dict, list, tuple)) else describe(value)


def shown(value) -> str:
    """A result as a message names it: its type, with its keys or its items."""
    if isinstance(value, dict):
        return say("a {kind} with the keys {keys}", kind=type(value).__name__, keys=list(value))
    if isinstance(value, (list, tuple)):
        return say("a {kind} of {n}: {items}", kind=type(value).__name__, n=len(value), items=describe(list(value)))
    return describe(value)


def same_shape(a, b, path="obj"):
    """Assert that b has a's container structure; yield (path, leaf_a, leaf_b).

    A dict (plain, OrderedDict, defaultdict, ...) must come back as a dict with the
    same keys in the same order; its own type is welcome, not required. A list
    stays a list and a tuple a tuple; a named tuple keeps its type."""
    if isinstance(a, dict):
        assert isinstance(b, dict), say(
            "a dict came back as another kind of container: rebuild each dict as a dict, the same keys in the same "
            "order ({{key: ... for key, value in obj.items()}})\n  {path} was a {was}, the result is "
            "{result}", path=path, was=type(a).__name__, result=kind(b))
        assert list(b) == list(a), say(
            "a dict came back with other keys, or in another order: keep every key, in order\n  {path}'s keys "
            "changed from {old} to {new}", path=path, old=list(a), new=list(b))
        for k in a:
            yield from same_shape(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(b) is type(a), say(
            "a list or tuple came back as another type: rebuild each as its own type (a list as a list, a tuple "
            "as a tuple, a named tuple with type(obj)(*items))\n  {path} was a {was}, the result "
            "is {result}", path=path, was=type(a).__name__, result=kind(b))
        assert len(b) == len(a), say(
            "a list or tuple came back with another number of items\n  {path} had {old} items, the result "
            "has {new}", path=path, old=len(a), new=len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            yield from same_shape(x, y, f"{path}[{i}]")
    else:
        yield path, a, b


def assert_unchanged(before, obj, what):
    found = change(before, obj)
    assert found is None, say(
        "{what} changed the object it was given ({found}): build new containers and leave the input as it "
        "was (the caller may still be using it)", what=what, found=found)


# --- pick_device ----------------------------------------------------------------


NO_INDEX = N_("pick_device() returns the generic device, without an index: torch.device('cuda'), not 'cuda:0' (the "
              "generic device means the current one, which the caller may choose with torch.cuda.set_device)\n"
              "  it gave {got}")


@pytest.mark.parametrize("cuda, mps, expected", [
    (True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")])
@pytest.mark.audit("pick_device[{cuda}-{mps}]")
def test_pick_device_prefers_cuda_then_mps_then_cpu(devices, monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    got = devices.pick_device()
    assert isinstance(got, torch.device), say(
        "pick_device() must return a torch.device, e.g. torch.device('cuda'), not a string or anything else\n"
        "  it returned {value}", value=describe(got))
    assert got.type == expected, say(
        "pick_device() must ask torch.cuda.is_available() first, then torch.backends.mps.is_available(), else "
        "take the CPU\n  with CUDA {cuda} and MPS {mps}, it gave {got}, expected {expected}",
        cuda=_("available") if cuda else _("unavailable"), mps=_("available") if mps else _("unavailable"),
        got=got, expected=expected)
    assert got.index is None, say(NO_INDEX, got=repr(got))


# --- device_of ------------------------------------------------------------------


@given(t=tensors())
@pytest.mark.audit("device_of.tensors")
def test_device_of_a_tensor_is_its_device(devices, t):
    got = devices.device_of(t)
    assert got == torch.device("cpu"), say(
        "device_of(t) of a tensor made on the CPU gave {got!r}: a tensor's device is t.device\n  t is {value}",
        got=got, value=describe(t))
    moved = t.detach().to(ELSEWHERE)
    got = devices.device_of(moved)
    assert got == ELSEWHERE, say(
        "device_of(t) of a tensor moved off the CPU gave {got!r}: a tensor's device is t.device\n  the tensor is on "
        "{meta}", got=got, meta=_(META))


@pytest.mark.audit("device_of.modules")
def test_device_of_a_module_is_its_first_parameters_then_buffers(devices):
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    got = devices.device_of(model)
    if got != torch.device("cpu"):
        fail_if(say(MODULE_DEVICE, case=_("for a model built on the CPU"), got=repr(got)))
    model.to(ELSEWHERE)
    got = devices.device_of(model)
    if got != ELSEWHERE:
        fail_if(say(MODULE_DEVICE, case=say("after model.to(device) to {meta}", meta=_(META)), got=repr(got)))

    class OnlyBuffers(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(3))

    buffers = OnlyBuffers().to(ELSEWHERE)
    got = devices.device_of(buffers)
    assert got == ELSEWHERE, say(
        "a module with no parameters but a buffer lives where its first buffer is: look at model.buffers() next\n"
        "  it gave {got!r}; the buffer is on {meta}", got=got, meta=_(META))
    got = devices.device_of(nn.ReLU())
    assert got is None, say(
        "nn.ReLU() holds no tensors at all, so it lives on no device: device_of must return None\n  it gave {got!r}",
        got=got)


@given(value=st.one_of(plain_leaves, st.lists(st.integers(), max_size=3),
                       st.floats(width=32).map(np.float32), st.integers(-5, 5).map(np.int64)))
@pytest.mark.audit("device_of.others")
def test_device_of_anything_else_is_none(devices, value):
    got = devices.device_of(value)
    assert got is None, say(
        "device_of of a value that is neither a tensor nor a module must be None: a Python number, a list or a "
        "NumPy value lives in ordinary host memory, on no torch device\n"
        "  device_of({value!r}) ({described}) gave {got!r}", value=value, described=describe(value), got=got)


# --- what assignment and the methods really do (the seed's questions) -------------


@pytest.mark.audit("device_of.assignment")
def test_assignment_moves_nothing(devices):
    a = torch.ones(3)
    b = a                    # b names the same tensor as a
    a = a.to(ELSEWHERE)      # a now names a NEW tensor; b still names the old one
    assert devices.device_of(b) == torch.device("cpu") and devices.device_of(a) == ELSEWHERE, say(
        "after `b = a; a = a.to(device)`, b is still the CPU tensor and a the moved one: assignment only binds a "
        "name, and Tensor.to returns a new tensor\n"
        "  device_of(b) gave {got_b!r}, device_of(a) gave {got_a!r}; the device is "
        "{meta}", got_b=devices.device_of(b), got_a=devices.device_of(a), meta=_(META))


@pytest.mark.audit("device_of.module_to")
def test_module_to_moves_in_place_and_tensor_to_returns_a_new_tensor(devices):
    model = nn.Linear(3, 1)
    returned = model.to(ELSEWHERE)
    assert returned is model, _("Module.to moves the module's own parameters and returns the same module object")
    if devices.device_of(model) != ELSEWHERE:
        fail_if(say(MODULE_DEVICE, case=say("after model.to(device) to {meta}", meta=_(META)),
                    got=repr(devices.device_of(model))))
    t = torch.ones(2)
    t.to(ELSEWHERE)          # the result is thrown away: t has not moved
    assert devices.device_of(t) == torch.device("cpu"), say(
        "`t.to(device)` on its own line leaves t where it was: Tensor.to RETURNS the moved tensor, so write "
        "`t = t.to(device)`\n  device_of(t) gave {got!r}", got=devices.device_of(t))


@pytest.mark.audit("device_of.float")
def test_float_changes_the_dtype_never_the_device(devices):
    correct = torch.tensor([True, False, True], device=ELSEWHERE)
    total = 0 + correct.sum()          # the seed's `accuracy_hist_train[epoch] += is_correct.sum()`
    as_float = total.float()
    assert devices.device_of(total) == ELSEWHERE and devices.device_of(as_float) == ELSEWHERE, say(
        "0 + is_correct.sum() is still a tensor on the device, and so is .float() of it: only .item(), "
        ".tolist() or .cpu() bring the value to the host\n"
        "  device_of gave {total!r} and {as_float!r}; the tensors are on "
        "{meta}", total=devices.device_of(total), as_float=devices.device_of(as_float), meta=_(META))


# --- to_device ------------------------------------------------------------------


@given(obj=nested_tensors())
@pytest.mark.audit("to_device.nests", "to_device.input")
def test_to_device_moves_every_tensor_and_keeps_the_structure(devices, obj):
    before = snapshot(obj)
    moved = devices.to_device(obj, ELSEWHERE)
    for path, old, new in same_shape(obj, moved):
        if isinstance(old, torch.Tensor):
            if not (isinstance(new, torch.Tensor) and new.device == ELSEWHERE):
                call = f"to_device(obj, {_(META)})"
                fail_if(say(NOT_MOVED, call=call, path=path, value=describe(new)))
            assert new.shape == old.shape and new.dtype == old.dtype, say(
                "a tensor changed its shape or dtype on the way: t.to(device) keeps both\n"
                "  {path} was {old} of {old_dtype}, it became {new} of {new_dtype}",
                path=path, old=describe(old), old_dtype=old.dtype, new=describe(new), new_dtype=new.dtype)
        else:
            assert new is old or new == old, say(
                "a value that is not a tensor must pass through unchanged\n"
                "  {path} was {old} and became {new}", path=path, old=describe(old), new=describe(new))
    assert_unchanged(before, obj, "to_device")


@pytest.mark.parametrize("container", ["dict", "OrderedDict", "defaultdict", "named tuple", "list", "tuple"])
@pytest.mark.audit("to_device.kinds[{container}]")
def test_to_device_rebuilds_each_kind_of_container(devices, container):
    inner = Pair(torch.ones(2), torch.zeros(2, dtype=torch.int64))
    items = {"batch": inner, "step": 3}
    obj = {"dict": lambda: dict(items), "OrderedDict": lambda: OrderedDict(items),
           "defaultdict": lambda: defaultdict(list, items), "named tuple": lambda: Pair(inner, 3),
           "list": lambda: [inner, 3], "tuple": lambda: (inner, 3)}[container]()
    before = snapshot(obj)
    moved = devices.to_device(obj, ELSEWHERE)
    if isinstance(obj, dict):
        assert isinstance(moved, dict) and list(moved) == ["batch", "step"], say(
            "to_device of a {container} must give a dict with the same keys in the same order (the same type is "
            "welcome: OrderedDict for an OrderedDict, say), every tensor in it moved\n  it gave {result}",
            container=container, result=shown(moved))
        batch, step = moved["batch"], moved["step"]
    else:
        assert type(moved) is type(obj) and len(moved) == 2, say(
            "to_device of a {container} must give a {container} again, item for item (a named tuple keeps its "
            "type: type(obj)(*items))\n  it gave {result}", container=container, result=shown(moved))
        batch, step = moved
    assert type(batch) is Pair, say(
        "inside the container, a named tuple keeps its type (type(obj)(*items))\n"
        "  the inner named tuple became {result}", result=shown(batch))
    if batch.first.device != ELSEWHERE:
        fail_if(say(NOT_MOVED, call=say("to_device({container} of a named tuple, {meta})", container=container,
                                        meta=_(META)),
                    path=_("the inner tensor"), value=describe(batch.first)))
    assert step == 3, say("a value that is not a tensor must pass through unchanged\n  3 became {value}",
                          value=describe(step))
    assert_unchanged(before, obj, "to_device")


# --- to_python ------------------------------------------------------------------


def python_type_for(t: torch.Tensor):
    if t.dtype == torch.bool:
        return bool
    return float if t.dtype.is_floating_point else int


NOT_PLAIN = N_("a tensor did not become plain Python: .item() for a 0-d tensor, .tolist() for larger ones (both copy "
               "to the host)\n  {what} was {old} and became {new}")
BY_DTYPE = N_("a 0-d tensor becomes a float, an int or a bool by its dtype, as .item() gives it (float(t) makes a "
              "float of every dtype, int(t) an int)\n  {what} was {old} (dtype {dtype}) and became {new}; expected "
              "{expected}")
OTHER_VALUES = N_("a tensor became other values: .item() / .tolist() keep them\n  {what} became {new}, expected "
                  "{expected}")


def plain_problem(what: str, old: torch.Tensor, new) -> str | None:
    """Why ``new`` is not ``old`` as plain Python values (a scalar of its dtype's type, or nested lists
    of them), or None: one first line per cause, wherever a check meets it."""
    if isinstance(new, (torch.Tensor, np.ndarray, np.generic)):
        return say(NOT_PLAIN, what=what, old=describe(old), new=describe(new))
    expected = old.detach().tolist()
    if old.ndim == 0 and type(new) is not python_type_for(old):
        return say(BY_DTYPE, what=what, old=describe(old), dtype=old.dtype, new=describe(new), expected=repr(expected))
    if not (new == expected or (new != new and expected != expected)):
        return say(OTHER_VALUES, what=what, new=repr(new), expected=repr(expected))
    return None


@given(obj=nested_tensors())
@example(obj=INTEGERS)
@pytest.mark.audit("to_python.nests", "to_python.input")
def test_to_python_gives_plain_python_values(devices, obj):
    before = snapshot(obj)
    plain = convert(devices, obj)
    for path, old, new in same_shape(obj, plain):
        if isinstance(old, torch.Tensor):
            fail_if(plain_problem(path, old, new))
        else:
            assert new is old or new == old, say(
                "a value that is not a tensor must pass through unchanged\n"
                "  {path} was {old} and became {new}", path=path, old=describe(old), new=describe(new))
    assert_unchanged(before, obj, "to_python")


def dtype_problem(tensor, got) -> str | None:
    return plain_problem("to_python(t)", tensor, got)


@pytest.mark.parametrize("tensor, expected", [
    (torch.tensor(0.5), 0.5), (torch.tensor(2.5, dtype=torch.float64), 2.5), (torch.tensor(7), 7),
    (torch.tensor(-3, dtype=torch.int32), -3), (torch.tensor(True), True),
    (torch.tensor(1.5, requires_grad=True), 1.5)], ids=lambda v: str(getattr(v, "dtype", v)))
@pytest.mark.audit("to_python.scalars[{tensor.dtype}-{tensor.requires_grad}]")
def test_to_python_of_a_0d_tensor_is_float_int_or_bool_by_dtype(devices, tensor, expected):
    got = convert(devices, tensor)
    fail_if(dtype_problem(tensor, got))


@pytest.mark.parametrize("value, expected_type", [
    (np.float64(1.5), float), (np.float32(0.25), float), (np.int64(7), int), (np.bool_(True), bool)])
@pytest.mark.audit("to_python.numpy[{value.dtype}]")
def test_to_python_turns_numpy_scalars_into_python_scalars(devices, value, expected_type):
    got = devices.to_python(value)
    assert type(got) is expected_type and got == value.item(), say(
        "NumPy scalars become Python ones with .item() (np.float64 even passes isinstance(x, float), but it is "
        "not a Python float)\n  to_python({value}) gave {got}", value=describe(value), got=describe(got))


GRAD = N_("a tensor that requires grad converts too: .item() works on it, and .tolist() or .numpy() after "
          ".detach() (NumPy refuses a tensor that requires grad)\n  to_python({tensor}) {outcome}")


def convert(devices, obj, grad=None):
    """devices.to_python(obj); NumPy's refusal of a tensor that requires grad (``grad``, in words)
    fails the check with GRAD."""
    __tracebackhide__ = True
    try:
        return devices.to_python(obj)
    except RuntimeError as exc:
        if numpy_refusal(exc) != "grad":
            raise
        fail_if(say(GRAD, tensor=grad or describe(obj),
                    outcome=say("raised {error}: {message}", error=type(exc).__name__, message=str(exc))))


@pytest.mark.audit("to_python.grad")
def test_to_python_works_with_grad_and_on_history_lists(devices):
    loss = (torch.ones(3, requires_grad=True) * 2).sum()
    history = [[loss], [torch.tensor(0.5)], [torch.tensor(3)]]
    got = convert(devices, history, _("[[loss (requires grad)], [tensor(0.5)], [tensor(3)]]"))
    shape = [type(got), *(type(x) for x in got)] if isinstance(got, list) else [type(got)]
    assert shape == [list, list, list, list] and all(len(x) == 1 for x in got), say(
        "to_python rebuilds a list of lists as a list of lists\n"
        "  to_python([[loss], [tensor(0.5)], [tensor(3)]]) gave {value}", value=describe(got))
    (grad,), (half,), (three,) = got
    fail_if(plain_problem(_("the loss (requires grad)"), loss, grad) or dtype_problem(torch.tensor(0.5), half)
            or dtype_problem(torch.tensor(3), three))


# --- host_copy ------------------------------------------------------------------


@given(t=tensors())
@pytest.mark.audit("host_copy", "host_copy.independent")
def test_host_copy_is_an_independent_cpu_tensor_without_history(devices, t):
    original = t.detach().clone()
    copy_ = devices.host_copy(t)
    assert isinstance(copy_, torch.Tensor) and copy_.device == torch.device("cpu"), say(
        "host_copy must return a CPU tensor\n  host_copy({value}) gave {got}", value=describe(t), got=describe(copy_))
    assert copy_.dtype == t.dtype and torch.equal(copy_, original), say(
        "host_copy must return a tensor equal to t, of its dtype\n  host_copy({value}, a {dtype}) gave "
        "{got}, a {got_dtype}", value=describe(t), dtype=t.dtype, got=describe(copy_), got_dtype=copy_.dtype)
    assert copy_ is not t, _(
        "host_copy(t) returned t itself: t.cpu() of a tensor that is already on the CPU is the same tensor, "
        "not a copy. Make a real copy (.clone(), or .to('cpu', copy=True))")
    assert not copy_.requires_grad and copy_.grad_fn is None, _(
        "the copy still has autograd history (requires_grad / grad_fn): .detach() it")
    if copy_.numel():
        assert copy_.untyped_storage().data_ptr() != t.untyped_storage().data_ptr(), _(
            "the copy shares memory with t: writing into one would change the other. .detach() and .cpu() "
            "both return views or the same tensor on the CPU; .clone() copies")
        with torch.no_grad():
            copy_.view(-1)[0] = 0 if copy_.dtype != torch.bool else not bool(copy_.view(-1)[0])
        assert torch.equal(t.detach(), original), _(
            "writing into host_copy(t) changed t: the copy shares memory with t; .clone() copies")


@pytest.mark.audit("host_copy.view")
def test_host_copy_of_a_view_copies_only_the_view(devices):
    base = torch.arange(12.0).reshape(3, 4)
    view = base[:, 1]                   # a strided view into base
    got = devices.host_copy(view)
    assert isinstance(got, torch.Tensor) and got.shape == (3,) and torch.equal(got, torch.tensor([1.0, 5.0, 9.0])), say(
        "host_copy of a view copies just the values the view shows\n"
        "  host_copy(base[:, 1]) of a 3x4 tensor gave {got}, expected tensor([1., 5., 9.])", got=describe(got))
    got[0] = -1
    assert base[0, 1] == 1.0, _(
        "writing into host_copy(view) changed the tensor the view looks into: the copy shares memory with it; "
        ".clone() copies")


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


@pytest.mark.cuda
@given(obj=nested_tensors())
@example(obj=INTEGERS)
@pytest.mark.audit("to_device.accelerator", "to_python.accelerator")
def test_to_device_and_to_python_round_trip_through_the_accelerator(devices, accelerator, obj):
    before = snapshot(obj)
    moved = devices.to_device(obj, accelerator)
    for path, old, new in same_shape(obj, moved):
        if isinstance(old, torch.Tensor):
            if not (isinstance(new, torch.Tensor) and new.device.type == accelerator.type):
                call = f"to_device(obj, {accelerator})"
                fail_if(say(NOT_MOVED, call=call, path=path, value=describe(new)))
    plain = convert(devices, moved)
    for path, old, new in same_shape(obj, plain):
        if isinstance(old, torch.Tensor):
            fail_if(plain_problem(say("{path}, moved to {device},", path=path, device=accelerator), old, new))
    assert_unchanged(before, obj, "to_device")


@pytest.mark.cuda
@pytest.mark.audit("host_copy.accelerator")
def test_host_copy_of_an_accelerator_tensor(devices, accelerator):
    t = (torch.arange(6.0).reshape(2, 3).to(accelerator) * 2).requires_grad_()
    got = devices.host_copy(t)
    assert (isinstance(got, torch.Tensor) and got.device == torch.device("cpu")
            and torch.equal(got.detach(), torch.arange(6.0).reshape(2, 3) * 2)), say(
        "host_copy of an accelerator tensor is a CPU tensor with the same values\n"
        "  host_copy of {value} gave {got}", value=describe(t), got=describe(got))
    assert not got.requires_grad and got.grad_fn is None, _("host_copy must drop the autograd history (.detach())")


@pytest.mark.cuda
@pytest.mark.audit("device_of.accelerator")
def test_a_model_moved_to_the_accelerator_lives_there(devices, accelerator):
    model = nn.Sequential(nn.Linear(4, 2), nn.ReLU())
    model.to(accelerator)
    got = devices.device_of(model)
    if not (isinstance(got, torch.device) and got.type == accelerator.type):
        fail_if(say(MODULE_DEVICE, case=say("after model.to({device})", device=accelerator), got=repr(got)))
    x = torch.ones(3, 4)
    got = devices.device_of(x.to(accelerator).float())
    assert isinstance(got, torch.device) and got.type == accelerator.type, say(
        ".float() changes the dtype only: the tensor stays on the accelerator, and device_of must say so\n"
        "  device_of(x.to({device}).float()) gave {got!r}", device=accelerator, got=got)


@pytest.mark.cuda
@pytest.mark.audit("to_python.accelerator")
def test_the_seeds_history_of_device_tensors_needs_to_python(devices, accelerator):
    # The seed: accuracy_hist_train[epoch] += is_correct.sum() on the GPU; and the count itself, an int64 tensor.
    correct = torch.tensor([True, True, False, True], device=accelerator)
    history = [0 + correct.sum() / 4, 0 + correct.float().mean(), correct.sum()]
    plain = convert(devices, history)
    assert isinstance(plain, list) and len(plain) == 3, say(
        "to_python rebuilds a list as a list\n  to_python of a list of three tensors gave {value}",
        value=describe(plain))
    for i, (old, new) in enumerate(zip(history, plain)):
        fail_if(plain_problem(say("the seed's history[{index}]", index=i), old, new))


@pytest.mark.cuda
@pytest.mark.audit("device_of.accelerator.assignment")
def test_assignment_and_tensor_to_on_the_accelerator(devices, accelerator):
    a = torch.ones(3)
    b = a
    a = a.to(accelerator)
    got_a, got_b = devices.device_of(a), devices.device_of(b)
    assert got_b == torch.device("cpu") and isinstance(got_a, torch.device) and got_a.type == accelerator.type, say(
        "after `b = a; a = a.to(device)`, b still names the CPU tensor and a the new device tensor: assignment "
        "binds a name, it never moves or copies anything\n  device_of(b) gave {got_b!r}, device_of(a) gave "
        "{got_a!r}", got_b=got_b, got_a=got_a)
    back = a.cpu()
    got = devices.device_of(back)
    assert got == torch.device("cpu"), say(
        ".cpu() of a device tensor is a new CPU tensor, and device_of must say so\n  device_of(a.cpu()) gave {got!r}",
        got=got)


@pytest.mark.cuda
@pytest.mark.audit("pick_device[True-False]")
def test_pick_device_takes_a_cuda_device_when_there_is_one(devices, accelerator, monkeypatch):
    if accelerator.type != "cuda":
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    got = devices.pick_device()
    assert isinstance(got, torch.device) and got.type == "cuda", say(
        "with CUDA available, pick_device() must give torch.device('cuda')\n  it gave {got!r}", got=got)
    assert got.index is None, say(NO_INDEX, got=repr(got))
