"""Checks for exercise 1, devices: where tensors live, and what assignment does.

Each check reads the answers of a record (records/devices.py: what is asked, on which inputs) and
asserts its rule on them. The seed's questions, as checks: which device a tensor or a model is on,
moving a whole nest of tensors without touching the original, turning tensors
into plain Python values on the host, and the `t.cpu()` trap (a CPU tensor's
`.cpu()` is the tensor itself, not a copy).

Without a GPU, the checks move tensors to PyTorch's `meta` device: a device
that is not the CPU (tensors there have a shape and dtype but no data), so a
tensor that was not moved is caught. Every message that names it says so. The
checks marked `cuda` run on a real or simulated accelerator.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import numpy as np
import pytest
import torch

from kata.checks.messages import describe, fail_if, numpy_refusal, where_in
from kata.harness.target import target_of
from kata.i18n import N_, _, say
from kata.records.snapshots import Change
from kata.records.strategies import Pair

ELSEWHERE = torch.device("meta")  # a device that is not the CPU, on every machine
# Said wherever a message names it: a learner has never met the meta device.
META = N_("meta (PyTorch's `meta` device: tensors there have a shape and a dtype but no data; these checks use it as "
          "a device that is not the CPU, the way a GPU is, on any machine)")


NOT_MOVED = N_("a tensor was not moved: `t.to(device)` RETURNS the moved tensor and leaves t where it was, so the "
               "result must hold what .to returned; every tensor, however deep in lists, tuples and dicts\n"
               "  after {call}, {path} is {value}")
NO_DEVICE = N_("what holds no tensor lives on no device, so device_of must return None for it: a module without "
               "parameters or buffers (nn.ReLU()), a Python number, a list, a NumPy value\n"
               "  device_of({value}) ({described}) gave {got!r}")
MODULE_DEVICE = N_("device_of(model) must say where the model's parameters are: a module lives where its first "
                   "parameter is (else its first buffer; None for a module that holds no tensors)\n"
                   "  {case}, device_of(model) gave {got}")


def kind(value) -> str:
    """A container's type, or a leaf as describe() says it (never an internal class name)."""
    return type(value).__name__ if isinstance(value, (dict, list, tuple)) else describe(value)


def same_dict(path: str, was: str, keys: list, b) -> None:
    """Assert that ``b``, at ``path`` of a result, is a dict with ``keys`` in order, as the dict (a ``was``: plain,
    OrderedDict, defaultdict, ...) it was made from; its own type is welcome, not required."""
    __tracebackhide__ = True
    assert isinstance(b, dict), say(
        "a dict came back as another kind of container: rebuild each dict as a dict, the same keys in the same "
        "order ({{key: ... for key, value in obj.items()}})\n  {path} was a {was}, the result is "
        "{result}", path=path, was=was, result=kind(b))
    assert list(b) == keys, say(
        "a dict came back with other keys, or in another order: keep every key, in order\n  {path}'s keys "
        "changed from {old} to {new}", path=path, old=keys, new=list(b))


def same_sequence(path: str, was: type, length: int, b) -> None:
    """Assert that ``b``, at ``path`` of a result, is a ``was`` of ``length`` items, as the list or tuple it was made
    from: a list stays a list and a tuple a tuple; a named tuple keeps its type."""
    __tracebackhide__ = True
    assert type(b) is was, say(
        "a list or tuple came back as another type: rebuild each as its own type (a list as a list, a tuple "
        "as a tuple, a named tuple with type(obj)(*items))\n  {path} was a {was}, the result "
        "is {result}", path=path, was=was.__name__, result=kind(b))
    assert len(b) == length, say(
        "a list or tuple came back with another number of items\n  {path} had {old} items, the result "
        "has {new}", path=path, old=length, new=len(b))


def same_shape(a, b, path="obj", others=True):
    """Assert that b has a's container structure (same_dict, same_sequence) and, with ``others``, each value of a that
    is not a tensor at its place in b; yield (path, tensor of a, what b holds at its place)."""
    if isinstance(a, dict):
        same_dict(path, type(a).__name__, list(a), b)
        for k in a:
            yield from same_shape(a[k], b[k], f"{path}[{k!r}]", others)
    elif isinstance(a, (list, tuple)):
        same_sequence(path, type(a), len(a), b)
        for i, (x, y) in enumerate(zip(a, b)):
            yield from same_shape(x, y, f"{path}[{i}]", others)
    elif isinstance(a, torch.Tensor):
        yield path, a, b
    else:
        assert not others or b is a or b == a, say(
            "a value that is not a tensor must pass through unchanged\n"
            "  {path} was {old} and became {new}", path=path, old=describe(a), new=describe(b))


CHANGED_INPUT = N_("a function changed the object it was given: to_device and to_python build new containers and "
                   "leave their input as it was (the caller may still be using it)\n  after {call}, {found}")


def assert_unchanged(found: dict | None, call: str):
    """``found``: the first change a record saw in what ``call`` was given (None: none)."""
    __tracebackhide__ = True
    assert found is None, say(CHANGED_INPUT, call=call, found=Change(keys=(), **found))


# --- pick_device ----------------------------------------------------------------


NOT_A_DEVICE = N_("pick_device() must return a torch.device, e.g. torch.device('cuda'), not a string or anything "
                  "else\n  it returned {value}")
NO_INDEX = N_("pick_device() returns the generic device, without an index: torch.device('cuda'), not 'cuda:0' (the "
              "generic device means the current one, which the caller may choose with torch.cuda.set_device)\n"
              "  it gave {got}")


@pytest.mark.parametrize("cuda, mps, expected", [
    (True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_pick_device_prefers_cuda_then_mps_then_cpu(devices, cuda, mps, expected):
    got = devices.answer("pick_device", cuda, mps)
    assert isinstance(got, torch.device), say(NOT_A_DEVICE, value=describe(got))
    assert got.type == expected, say(
        "pick_device() must ask torch.cuda.is_available() first, then torch.backends.mps.is_available(), else "
        "take the CPU\n  with CUDA {cuda} and MPS {mps}, it gave {got}, expected {expected}",
        cuda=_("available") if cuda else _("unavailable"), mps=_("available") if mps else _("unavailable"),
        got=got, expected=expected)
    assert got.index is None, say(NO_INDEX, got=repr(got))


# --- device_of ------------------------------------------------------------------


def test_device_of_a_tensor_is_its_device(devices):
    for case in devices.cases("device_of_tensor"):
        (t, where), got = case.args, case.answer
        if where == "cpu":
            assert got == torch.device("cpu"), say(
                "device_of(t) of a tensor made on the CPU gave {got!r}: a tensor's device is t.device\n  t is {value}",
                got=got, value=describe(t))
        else:
            assert got == ELSEWHERE, say(
                "device_of(t) of a tensor moved off the CPU gave {got!r}: a tensor's device is t.device\n  the "
                "tensor is on {meta}", got=got, meta=_(META))


NEXT_EMPTY = N_("device_of(model) raised StopIteration for {case}: next(model.parameters()) has nothing to give "
                "when a module has no parameters. Look through the parameters, then the buffers, and return None "
                "when there are neither (a loop over each does, or next(iterator, None))\n  {where}")


def module_device(devices, kind, case):
    """device_of's answer for the module of ``kind``; its StopIteration (next() of an empty iterator) explained."""
    __tracebackhide__ = True
    try:
        return devices.answer("device_of_module", kind)
    except StopIteration as exc:
        fail_if(say(NEXT_EMPTY, case=case, where=where_in(exc, target_of(devices).path) or "StopIteration"))


def test_device_of_a_module_is_its_first_parameters_then_buffers(devices):
    for kind, where, case in (("built on the CPU", torch.device("cpu"), _("for a model built on the CPU")),
                              ("moved", ELSEWHERE, say("after model.to(device) to {meta}", meta=_(META)))):
        got = devices.answer("device_of_module", kind)
        if got != where:
            fail_if(say(MODULE_DEVICE, case=case, got=repr(got)))
    got = module_device(devices, "buffers only", _("a module with a buffer and no parameters"))
    assert got == ELSEWHERE, say(
        "a module with no parameters but a buffer lives where its first buffer is: look at model.buffers() next\n"
        "  it gave {got!r}; the buffer is on {meta}", got=got, meta=_(META))
    got = module_device(devices, "nothing", _("nn.ReLU(), which holds no tensors"))
    assert got is None, say(NO_DEVICE, value="nn.ReLU()", described=_("a module that holds no tensors"), got=got)


def test_device_of_anything_else_is_none(devices):
    for case in devices.cases("device_of_other"):
        (value,), got = case.args, case.answer
        assert got is None, say(NO_DEVICE, value=repr(value), described=describe(value), got=got)


# --- what assignment and the methods really do (the seed's questions) -------------


def test_assignment_moves_nothing(devices):
    got_b, got_a = devices.answer("device_of_scenes")["assignment"]
    assert got_b == torch.device("cpu") and got_a == ELSEWHERE, say(
        "after `b = a; a = a.to(device)`, b is still the CPU tensor and a the moved one: assignment only binds a "
        "name, and Tensor.to returns a new tensor\n  device_of(b) gave {got_b!r}, device_of(a) gave {got_a!r}; the "
        "device is {meta}", got_b=got_b, got_a=got_a, meta=_(META))


def test_module_to_moves_in_place_and_tensor_to_returns_a_new_tensor(devices):
    scenes = devices.answer("device_of_scenes")
    if scenes["module_to"] != ELSEWHERE:
        fail_if(say(MODULE_DEVICE, case=say("after model.to(device) to {meta}", meta=_(META)),
                    got=repr(scenes["module_to"])))
    assert scenes["thrown_away"] == torch.device("cpu"), say(
        "`t.to(device)` on its own line leaves t where it was: Tensor.to RETURNS the moved tensor, so write "
        "`t = t.to(device)`\n  device_of(t) gave {got!r}", got=scenes["thrown_away"])


def test_float_changes_the_dtype_never_the_device(devices):
    total, as_float = devices.answer("device_of_scenes")["float"]
    assert total == ELSEWHERE and as_float == ELSEWHERE, say(
        "0 + is_correct.sum() is still a tensor on the device, and so is .float() of it: only .item(), "
        ".tolist() or .cpu() bring the value to the host\n  device_of gave {total!r} and {as_float!r}; the tensors "
        "are on {meta}", total=total, as_float=as_float, meta=_(META))


# --- to_device ------------------------------------------------------------------


def test_to_device_moves_every_tensor_and_keeps_the_structure(devices):
    call = f"to_device(obj, {_(META)})"
    for case in devices.cases("to_device_nest"):
        (obj,), found = case.args, case.answer
        for path, old, new in same_shape(obj, found["out"]):   # each tensor moved, of its shape and dtype
            if not (isinstance(new, torch.Tensor) and new.device.type == ELSEWHERE.type):
                fail_if(say(NOT_MOVED, call=call, path=path, value=describe(new)))
            assert new.shape == old.shape and new.dtype == old.dtype, say(
                "a tensor changed its shape or dtype on the way: t.to(device) keeps both\n"
                "  {path} was {old} of {old_dtype}, it became {new} of {new_dtype}",
                path=path, old=describe(old), old_dtype=old.dtype, new=describe(new), new_dtype=new.dtype)
        assert_unchanged(found["input"], "to_device(obj, meta)")


@pytest.mark.parametrize("container", ["dict", "OrderedDict", "defaultdict", "named tuple", "list", "tuple"])
def test_to_device_rebuilds_each_kind_of_container(devices, container):
    # The record's input: a {container} of a named tuple of two tensors (`batch`) and the number 3 (`step`).
    found = devices.answer("to_device_kind", container)
    moved = found["out"]
    if container in ("dict", "OrderedDict", "defaultdict"):
        same_dict("obj", container, ["batch", "step"], moved)
        batch, step, inner = moved["batch"], moved["step"], "obj['batch']"
    else:
        same_sequence("obj", {"named tuple": Pair, "list": list, "tuple": tuple}[container], 2, moved)
        (batch, step), inner = moved, "obj[0]"
    same_sequence(inner, Pair, 2, batch)
    call = N_("to_device({container} of a named tuple, {meta})")
    if not isinstance(batch.first, torch.Tensor) or batch.first.device != ELSEWHERE:
        fail_if(say(NOT_MOVED, call=say(call, container=container, meta=_(META)), path=_("the inner tensor"),
                    value=describe(batch.first)))
    assert step == 3, say("a value that is not a tensor must pass through unchanged\n  3 became {value}",
                          value=describe(step))
    assert_unchanged(found["input"], say(call, container=container, meta="meta"))


# --- to_python ------------------------------------------------------------------


NOT_PLAIN = N_("a tensor did not become plain Python: .item() for a 0-d tensor, .tolist() for larger ones (both copy "
               "to the host)")
# What it became, under NOT_PLAIN's one first line (one cause, whatever the dtype).
BECAME = N_("  {what} was {old} and became {new}")
DTYPE_ONLY = N_("  {what} was {old} ({old_dtype}) and became {new} ({new_dtype}): .float() (like .double() and "
                ".to(dtype)) changes only the dtype, and gives a tensor again, on the same device")
BY_DTYPE = N_("a 0-d tensor becomes a float, an int or a bool by its dtype, as .item() gives it (float(t) makes a "
              "float of every dtype, int(t) an int)\n  {what} was {old} (dtype {dtype}) and became {new}; expected "
              "{expected}")
OTHER_VALUES = N_("a tensor became other values: .item() / .tolist() keep them\n  {what} became {new}, expected "
                  "{expected}")


def plain_problem(what: str, old: torch.Tensor, new) -> str | None:
    """Why ``new`` is not ``old`` as plain Python values (a scalar of its dtype's type, or nested lists
    of them), or None: one first line per cause, wherever a check meets it."""
    if isinstance(new, torch.Tensor) and new.dtype != old.dtype:   # .float(), .double(), .to(dtype): a tensor still
        return _(NOT_PLAIN) + "\n" + say(DTYPE_ONLY, what=what, old=describe(old), old_dtype=old.dtype,
                                         new=describe(new), new_dtype=new.dtype)
    if isinstance(new, (torch.Tensor, np.ndarray, np.generic)):
        return _(NOT_PLAIN) + "\n" + say(BECAME, what=what, old=describe(old), new=describe(new))
    expected = old.detach().tolist()
    if old.ndim == 0 and type(new) is not type(expected):   # .item()'s type: bool, float or int by the dtype
        return say(BY_DTYPE, what=what, old=describe(old), dtype=old.dtype, new=describe(new), expected=repr(expected))
    if not (new == expected or (new != new and expected != expected)):
        return say(OTHER_VALUES, what=what, new=repr(new), expected=repr(expected))
    return None


GRAD = N_("a tensor that requires grad converts too: .item() works on it, and .tolist() or .numpy() after "
          ".detach() (NumPy refuses a tensor that requires grad)\n  to_python({tensor}) {outcome}")


def converted(case, grad=None):
    """The answer of a case of to_python; NumPy's refusal of a tensor that requires grad (``grad``, in words)
    fails the check with GRAD."""
    __tracebackhide__ = True
    exc = case.raised
    if exc is not None and numpy_refusal(exc) == "grad":
        fail_if(say(GRAD, tensor=grad or describe(case.args[0]),
                    outcome=say("raised {error}: {message}", error=type(exc).__name__, message=str(exc))))
    return case.answer


def test_to_python_gives_plain_python_values(devices):
    for case in devices.cases("to_python_nest"):
        (obj,), found = case.args, converted(case)
        for path, old, new in same_shape(obj, found["out"]):
            fail_if(plain_problem(path, old, new))
        assert_unchanged(found["input"], "to_python(obj)")


@pytest.mark.parametrize("dtype, value, grad", [
    ("float32", 0.5, False), ("float64", 2.5, False), ("int64", 7, False), ("int32", -3, False),
    ("bool", True, False), ("float32", 1.5, True)], ids=lambda v: str(v))
def test_to_python_of_a_0d_tensor_is_float_int_or_bool_by_dtype(devices, dtype, value, grad):
    case = next(c for c in devices.cases("to_python_scalar") if c.args == (dtype, value, grad))
    tensor = torch.tensor(value, dtype=getattr(torch, dtype), requires_grad=grad)
    fail_if(plain_problem("to_python(t)", tensor, converted(case)))


@pytest.mark.parametrize("dtype, value, expected_type", [
    ("float64", 1.5, float), ("float32", 0.25, float), ("int64", 7, int), ("bool", True, bool)])
def test_to_python_turns_numpy_scalars_into_python_scalars(devices, dtype, value, expected_type):
    got = devices.answer("to_python_numpy", dtype, value)
    given = np.dtype(dtype).type(value)
    assert type(got) is expected_type and got == given.item(), say(
        "NumPy scalars become Python ones with .item() (np.float64 even passes isinstance(x, float), but it is "
        "not a Python float)\n  to_python({value}) gave {got}", value=describe(given), got=describe(got))


def test_to_python_works_with_grad_and_on_history_lists(devices):
    (case,) = devices.cases("to_python_grad")
    got = converted(case, _("[[loss (requires grad)], [tensor(0.5)], [tensor(3)]]"))
    shape = [type(got), *(type(x) for x in got)] if isinstance(got, list) else [type(got)]
    assert shape == [list, list, list, list] and all(len(x) == 1 for x in got), say(
        "to_python rebuilds a list of lists as a list of lists\n"
        "  to_python([[loss], [tensor(0.5)], [tensor(3)]]) gave {value}", value=describe(got))
    (grad,), (half,), (three,) = got
    loss = (torch.ones(3, requires_grad=True) * 2).sum()
    fail_if(plain_problem(_("the loss (requires grad)"), loss, grad)
            or plain_problem("to_python(t)", torch.tensor(0.5), half)
            or plain_problem("to_python(t)", torch.tensor(3), three))


# --- host_copy ------------------------------------------------------------------


SHARED = N_("host_copy's result shares memory with the tensor it was given: writing into one would change the other. "
           ".detach() and .cpu() both return views or the same tensor on the CPU; .clone() (or .to('cpu', "
           "copy=True)) copies\n  {how}")
HISTORY = N_("host_copy's result still has autograd history (requires_grad / grad_fn): .detach() it\n"
             "  host_copy({value}) gave {got}")


def test_host_copy_is_an_independent_cpu_tensor_without_history(devices):
    for case in devices.cases("host_copy"):
        (t,), found = case.args, case.answer
        copy_ = found["out"]
        assert isinstance(copy_, torch.Tensor) and copy_.device == torch.device("cpu"), say(
            "host_copy must return a CPU tensor\n  host_copy({value}) gave {got}", value=describe(t),
            got=describe(copy_))
        assert copy_.dtype == t.dtype and torch.equal(copy_.detach(), t.detach()), say(
            "host_copy must return a tensor equal to t, of its dtype\n  host_copy({value}, a {dtype}) gave "
            "{got}, a {got_dtype}", value=describe(t), dtype=t.dtype, got=describe(copy_), got_dtype=copy_.dtype)
        assert not found["is_t"], say(SHARED, how=_(
            "host_copy(t) returned t itself: t.cpu() of a tensor that is already on the CPU is the same tensor"))
        assert not copy_.requires_grad and copy_.grad_fn is None, say(HISTORY, value=describe(t), got=describe(copy_))
        if copy_.numel():
            assert not found["shares"], say(SHARED, how=say("host_copy({value}) gave a tensor in the same memory",
                                                            value=describe(t)))
            assert torch.equal(found["t_after_write"], t.detach()), say(SHARED, how=_(
                "writing into host_copy(t) changed t"))


def test_host_copy_of_a_view_copies_only_the_view(devices):
    found = devices.answer("host_copy_view")
    got = found["out"]
    assert isinstance(got, torch.Tensor) and got.shape == (3,) and torch.equal(got, torch.tensor([1.0, 5.0, 9.0])), say(
        "host_copy of a view copies just the values the view shows\n"
        "  host_copy(base[:, 1]) of a 3x4 tensor gave {got}, expected tensor([1., 5., 9.])", got=describe(got))
    assert found["base_after_write"][0, 1] == 1.0, say(SHARED, how=_(
        "writing into host_copy(base[:, 1]) changed base, the tensor the view looks into"))


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


@pytest.mark.cuda
def test_to_device_and_to_python_round_trip_through_the_accelerator(devices, accelerator):
    for case in devices.cases("round_trip"):
        (obj,), found = case.args, converted(case)
        # First: to_python is given what to_device gave, so an input changed in place changes both answers.
        assert_unchanged(found["input"], say("to_device(obj, {device}), then to_python of what it gave",
                                             device=accelerator))
        for path, _old, new in same_shape(obj, found["moved"], others=False):
            if not (isinstance(new, torch.Tensor) and new.device.type == accelerator.type):
                call = f"to_device(obj, {accelerator})"
                fail_if(say(NOT_MOVED, call=call, path=path, value=describe(new)))
        for path, old, new in same_shape(obj, found["plain"], others=False):
            fail_if(plain_problem(say("{path}, moved to {device},", path=path, device=accelerator), old, new))


@pytest.mark.cuda
def test_host_copy_of_an_accelerator_tensor(devices, accelerator):
    (case,) = devices.cases("host_copy_accelerator")
    (scale,), got = case.args, case.answer
    expected = torch.arange(6.0).reshape(2, 3) * scale
    given = describe(expected.to(accelerator).requires_grad_())
    assert (isinstance(got, torch.Tensor) and got.device == torch.device("cpu")
            and torch.equal(got.detach(), expected)), say(
        "host_copy of an accelerator tensor is a CPU tensor with the same values\n"
        "  host_copy of {value} gave {got}", value=given, got=describe(got))
    assert not got.requires_grad and got.grad_fn is None, say(HISTORY, value=given, got=describe(got))


@pytest.mark.cuda
def test_a_model_moved_to_the_accelerator_lives_there(devices, accelerator):
    found = devices.answer("device_of_accelerator")
    got = found["model"]
    if not (isinstance(got, torch.device) and got.type == accelerator.type):
        fail_if(say(MODULE_DEVICE, case=say("after model.to({device})", device=accelerator), got=repr(got)))
    got = found["float"]
    assert isinstance(got, torch.device) and got.type == accelerator.type, say(
        ".float() changes the dtype only: the tensor stays on the accelerator, and device_of must say so\n"
        "  device_of(x.to({device}).float()) gave {got!r}", device=accelerator, got=got)


@pytest.mark.cuda
def test_the_seeds_history_of_device_tensors_needs_to_python(devices, accelerator):
    # The seed: accuracy_hist_train[epoch] += is_correct.sum() on the GPU; and the count itself, an int64 tensor.
    (case,) = devices.cases("seeds_history")
    correct = torch.tensor(case.args)
    history = [0 + correct.sum() / 4, 0 + correct.float().mean(), correct.sum()]
    plain = converted(case)
    assert isinstance(plain, list) and len(plain) == 3, say(
        "to_python rebuilds a list as a list\n  to_python of a list of three tensors gave {value}",
        value=describe(plain))
    for i, (old, new) in enumerate(zip(history, plain)):
        fail_if(plain_problem(say("the seed's history[{index}]", index=i), old, new))


@pytest.mark.cuda
def test_assignment_and_tensor_to_on_the_accelerator(devices, accelerator):
    found = devices.answer("device_of_accelerator")
    got_a, got_b = found["assignment"]
    assert got_b == torch.device("cpu") and isinstance(got_a, torch.device) and got_a.type == accelerator.type, say(
        "after `b = a; a = a.to(device)`, b still names the CPU tensor and a the new device tensor: assignment "
        "binds a name, it never moves or copies anything\n  device_of(b) gave {got_b!r}, device_of(a) gave "
        "{got_a!r}", got_b=got_b, got_a=got_a)
    got = found["cpu"]
    assert got == torch.device("cpu"), say(
        ".cpu() of a device tensor is a new CPU tensor, and device_of must say so\n  device_of(a.cpu()) gave {got!r}",
        got=got)


@pytest.mark.cuda
def test_pick_device_takes_a_cuda_device_when_there_is_one(devices, accelerator):
    got = devices.answer("pick_device_with_cuda")
    assert isinstance(got, torch.device), say(NOT_A_DEVICE, value=describe(got))
    assert got.type == "cuda", say(
        "with CUDA available, pick_device() must give torch.device('cuda')\n  it gave {got!r}", got=got)
    assert got.index is None, say(NO_INDEX, got=repr(got))
