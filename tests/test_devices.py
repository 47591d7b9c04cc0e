"""Checks for exercise 1, devices: where tensors live, and what assignment does.

The seed's questions, as checks: which device a tensor or a model is on,
moving a whole nest of tensors without touching the original, turning tensors
into plain Python values on the host, and the `t.cpu()` trap (a CPU tensor's
`.cpu()` is the tensor itself, not a copy).

Without a GPU, the checks move tensors to PyTorch's `meta` device: a device
that is not the CPU (tensors there have a shape and dtype but no data), so a
tensor that was not moved is caught. The checks marked `cuda` run on a real or
simulated accelerator.
"""

from collections import OrderedDict

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from kata.strategies import Pair, nested_tensors, plain_leaves, tensors

ELSEWHERE = torch.device("meta")  # a device that is not the CPU, on every machine


def same_shape(a, b, path="obj"):
    """Assert that b has a's container structure and types; yield (path, leaf_a, leaf_b)."""
    if isinstance(a, dict):
        assert type(b) is type(a), f"{path} was a {type(a).__name__}, the result is a {type(b).__name__}"
        assert list(b) == list(a), f"{path}'s keys changed from {list(a)} to {list(b)}"
        for k in a:
            yield from same_shape(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(b) is type(a), (
            f"{path} was a {type(a).__name__}, the result is a {type(b).__name__}: rebuild each container as "
            "its own type (a named tuple with type(obj)(*items))")
        assert len(b) == len(a), f"{path} had {len(a)} items, the result has {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            yield from same_shape(x, y, f"{path}[{i}]")
    else:
        yield path, a, b


def snapshot(obj):
    """The structure with every tensor replaced by (id, device, a copy): to detect mutation."""
    if isinstance(obj, dict):
        return type(obj), [(k, snapshot(v)) for k, v in obj.items()], id(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj), [snapshot(v) for v in obj], id(obj)
    if isinstance(obj, torch.Tensor):
        return "tensor", id(obj), obj.device, obj.detach().clone()
    return "value", obj


def assert_unchanged(before, obj, what):
    after = snapshot(obj)
    assert _same(before, after), (
        f"{what} changed the object it was given: build new containers and leave the input as it was "
        "(the caller may still be using it)")


def _same(a, b):
    if isinstance(a, tuple) and a and a[0] == "tensor":
        return (isinstance(b, tuple) and b[0] == "tensor" and a[1] == b[1] and a[2] == b[2]
                and torch.equal(a[3], b[3]))
    if isinstance(a, (list, tuple)):
        return isinstance(b, type(a)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)  # NaN equals NaN here


# --- pick_device ----------------------------------------------------------------


@pytest.mark.parametrize("cuda, mps, expected", [
    (True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_pick_device_prefers_cuda_then_mps_then_cpu(devices, monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    got = devices.pick_device()
    assert isinstance(got, torch.device), (
        f"pick_device() returned {got!r} ({type(got).__name__}); return a torch.device, e.g. torch.device('cuda')")
    assert got.type == expected, (
        f"with CUDA {'available' if cuda else 'unavailable'} and MPS {'available' if mps else 'unavailable'}, "
        f"pick_device() gave {got}, expected {expected}: ask torch.cuda.is_available() first, then "
        "torch.backends.mps.is_available(), else the CPU")


# --- device_of ------------------------------------------------------------------


@given(t=tensors())
def test_device_of_a_tensor_is_its_device(devices, t):
    assert devices.device_of(t) == t.device == torch.device("cpu")
    moved = t.detach().to(ELSEWHERE)
    assert devices.device_of(moved) == ELSEWHERE, (
        f"device_of(a tensor on {ELSEWHERE}) gave {devices.device_of(moved)!r}: a tensor's device is t.device")


def test_device_of_a_module_is_its_first_parameters_then_buffers(devices):
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    assert devices.device_of(model) == torch.device("cpu")
    model.to(ELSEWHERE)
    assert devices.device_of(model) == ELSEWHERE, (
        "after model.to(device), device_of(model) must say that device: a module lives where its parameters are "
        "(next(model.parameters()).device)")

    class OnlyBuffers(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(3))

    buffers = OnlyBuffers().to(ELSEWHERE)
    assert devices.device_of(buffers) == ELSEWHERE, (
        "a module with no parameters but a buffer lives where its first buffer is: look at model.buffers() next")
    assert devices.device_of(nn.ReLU()) is None, (
        "nn.ReLU() holds no tensors at all, so it lives on no device: device_of must return None")


@given(value=st.one_of(plain_leaves, st.lists(st.integers(), max_size=3),
                       st.floats(width=32).map(np.float32), st.integers(-5, 5).map(np.int64)))
def test_device_of_anything_else_is_none(devices, value):
    assert devices.device_of(value) is None, (
        f"device_of({value!r}) gave {devices.device_of(value)!r}: a {type(value).__name__} is not a tensor or a "
        "module, it lives in ordinary host memory and on no torch device: return None")


# --- what assignment and the methods really do (the seed's questions) -------------


def test_assignment_moves_nothing(devices):
    a = torch.ones(3)
    b = a                    # b names the same tensor as a
    a = a.to(ELSEWHERE)      # a now names a NEW tensor; b still names the old one
    assert devices.device_of(b) == torch.device("cpu") and devices.device_of(a) == ELSEWHERE, (
        f"after `b = a; a = a.to(device)`, device_of(b) gave {devices.device_of(b)} and device_of(a) gave "
        f"{devices.device_of(a)}: assignment only binds a name, and Tensor.to returns a new tensor")


def test_module_to_moves_in_place_and_tensor_to_returns_a_new_tensor(devices):
    model = nn.Linear(3, 1)
    returned = model.to(ELSEWHERE)
    assert returned is model and devices.device_of(model) == ELSEWHERE, (
        "Module.to moves the module's own parameters and returns the same module object")
    t = torch.ones(2)
    t.to(ELSEWHERE)          # the result is thrown away: t has not moved
    assert devices.device_of(t) == torch.device("cpu"), (
        "`t.to(device)` on its own line leaves t where it was: Tensor.to RETURNS the moved tensor, so write "
        "`t = t.to(device)`")
    assert t.to(t.device) is t, "Tensor.to the device it is already on returns the tensor itself"


def test_float_changes_the_dtype_never_the_device(devices):
    correct = torch.tensor([True, False, True], device=ELSEWHERE)
    total = 0 + correct.sum()          # the seed's `accuracy_hist_train[epoch] += is_correct.sum()`
    as_float = total.float()
    assert devices.device_of(total) == ELSEWHERE and devices.device_of(as_float) == ELSEWHERE, (
        "0 + is_correct.sum() is still a tensor on the device, and so is .float() of it: only .item(), "
        ".tolist() or .cpu() bring the value to the host")


# --- to_device ------------------------------------------------------------------


@given(obj=nested_tensors())
def test_to_device_moves_every_tensor_and_keeps_the_structure(devices, obj):
    before = snapshot(obj)
    moved = devices.to_device(obj, ELSEWHERE)
    for path, old, new in same_shape(obj, moved):
        if isinstance(old, torch.Tensor):
            assert isinstance(new, torch.Tensor) and new.device == ELSEWHERE, (
                f"{path} is on {getattr(new, 'device', type(new).__name__)} after to_device(obj, {ELSEWHERE}): "
                "every tensor, however deep in lists, tuples and dicts, must be moved with t.to(device)")
            assert new.shape == old.shape and new.dtype == old.dtype, f"{path} changed shape or dtype"
        else:
            assert new is old or new == old, f"{path} ({old!r}) was not a tensor and must pass through unchanged"
    assert_unchanged(before, obj, "to_device")


def test_to_device_keeps_named_tuples_and_dict_types(devices):
    obj = OrderedDict(batch=Pair(torch.ones(2), torch.zeros(2, dtype=torch.int64)), step=3)
    moved = devices.to_device(obj, ELSEWHERE)
    assert type(moved) is OrderedDict and type(moved["batch"]) is Pair, (
        f"to_device turned {type(obj).__name__}/{type(obj['batch']).__name__} into "
        f"{type(moved).__name__}/{type(moved['batch']).__name__}: rebuild each container as its own type")
    assert moved["batch"].first.device == ELSEWHERE and moved["step"] == 3
    assert obj["batch"].first.device == torch.device("cpu"), "the input must not be changed"


# --- to_python ------------------------------------------------------------------


def python_type_for(t: torch.Tensor):
    if t.dtype == torch.bool:
        return bool
    return float if t.dtype.is_floating_point else int


@given(obj=nested_tensors())
def test_to_python_gives_plain_python_values(devices, obj):
    before = snapshot(obj)
    plain = devices.to_python(obj)
    for path, old, new in same_shape(obj, plain):
        if isinstance(old, torch.Tensor):
            expected = old.detach().tolist()
            assert not isinstance(new, (torch.Tensor, np.ndarray, np.generic)), (
                f"{path} became {type(new).__name__}, not plain Python: .item() for a 0-d tensor, .tolist() for "
                "larger ones (both copy to the host)")
            if old.ndim == 0:
                assert type(new) is python_type_for(old), (
                    f"{path}, a 0-d {old.dtype} tensor, became a {type(new).__name__}; .item() gives a "
                    f"{python_type_for(old).__name__} for it")
            assert new == expected or (new != new and expected != expected), (
                f"{path} became {new!r}, expected {expected!r}")
        else:
            assert new is old or new == old, f"{path} ({old!r}) must pass through unchanged"
    assert_unchanged(before, obj, "to_python")


@pytest.mark.parametrize("tensor, expected", [
    (torch.tensor(0.5), 0.5), (torch.tensor(2.5, dtype=torch.float64), 2.5), (torch.tensor(7), 7),
    (torch.tensor(-3, dtype=torch.int32), -3), (torch.tensor(True), True),
    (torch.tensor(1.5, requires_grad=True), 1.5)], ids=lambda v: str(getattr(v, "dtype", v)))
def test_to_python_of_a_0d_tensor_is_float_int_or_bool_by_dtype(devices, tensor, expected):
    got = devices.to_python(tensor)
    assert type(got) is type(expected) and got == expected, (
        f"to_python({tensor!r}) gave {got!r} ({type(got).__name__}); a 0-d {tensor.dtype} tensor becomes a "
        f"{type(expected).__name__}, as .item() gives it")


@pytest.mark.parametrize("value, expected_type", [
    (np.float64(1.5), float), (np.float32(0.25), float), (np.int64(7), int), (np.bool_(True), bool)])
def test_to_python_turns_numpy_scalars_into_python_scalars(devices, value, expected_type):
    got = devices.to_python(value)
    assert type(got) is expected_type and got == value.item(), (
        f"to_python({value!r}) gave {got!r} ({type(got).__name__}); NumPy scalars become Python ones with "
        ".item() (note np.float64 even passes isinstance(x, float), but it is not a Python float)")


def test_to_python_works_with_grad_and_on_history_lists(devices):
    loss = (torch.ones(3, requires_grad=True) * 2).sum()
    history = [[loss], [torch.tensor(0.5)], [torch.tensor(3)]]
    got = devices.to_python(history)
    assert got == [[6.0], [0.5], [3]] and [type(x[0]) for x in got] == [float, float, int], (
        f"to_python({history}) gave {got}: a tensor that requires grad converts with .item() too (or "
        ".detach() first before .tolist())")


# --- host_copy ------------------------------------------------------------------


@given(t=tensors())
def test_host_copy_is_an_independent_cpu_tensor_without_history(devices, t):
    original = t.detach().clone()
    copy_ = devices.host_copy(t)
    assert isinstance(copy_, torch.Tensor) and copy_.device == torch.device("cpu"), "host_copy must return a CPU tensor"
    assert copy_.dtype == t.dtype and torch.equal(copy_, original), "host_copy must return a tensor equal to t"
    assert copy_ is not t, (
        "host_copy(t) returned t itself: t.cpu() of a tensor that is already on the CPU is the same tensor, "
        "not a copy. Make a real copy (.clone(), or .to('cpu', copy=True))")
    assert not copy_.requires_grad and copy_.grad_fn is None, (
        "the copy still has autograd history (requires_grad / grad_fn): .detach() it")
    if copy_.numel():
        assert copy_.untyped_storage().data_ptr() != t.untyped_storage().data_ptr(), (
            "the copy shares memory with t: writing into one would change the other. .detach() and .cpu() "
            "both return views or the same tensor on the CPU; .clone() copies")
        with torch.no_grad():
            copy_.view(-1)[0] = 0 if copy_.dtype != torch.bool else not bool(copy_.view(-1)[0])
        assert torch.equal(t.detach(), original), "writing into host_copy(t) changed t"


def test_host_copy_of_a_view_copies_only_the_view(devices):
    base = torch.arange(12.0).reshape(3, 4)
    view = base[:, 1]                   # a strided view into base
    got = devices.host_copy(view)
    assert torch.equal(got, torch.tensor([1.0, 5.0, 9.0])) and got.shape == (3,), (
        f"host_copy of a column view gave {got!r}")
    got[0] = -1
    assert base[0, 1] == 1.0, "writing into host_copy(view) changed the tensor the view looks into"


# --- on an accelerator (real CUDA, MPS, or the simulated one) -------------------


@pytest.mark.cuda
@given(obj=nested_tensors())
def test_to_device_and_to_python_round_trip_through_the_accelerator(devices, accelerator, obj):
    before = snapshot(obj)
    moved = devices.to_device(obj, accelerator)
    for path, old, new in same_shape(obj, moved):
        if isinstance(old, torch.Tensor):
            assert new.device.type == accelerator.type, (
                f"{path} is on {new.device} after to_device(obj, {accelerator}); every tensor must be moved")
    plain = devices.to_python(moved)
    for path, old, new in same_shape(obj, plain):
        if isinstance(old, torch.Tensor):
            assert not isinstance(new, torch.Tensor) and new == old.detach().tolist(), (
                f"{path}: to_python of an {accelerator.type} tensor gave {new!r}; .item()/.tolist() copy the values "
                "to the host as plain Python numbers")
    assert_unchanged(before, obj, "to_device")


@pytest.mark.cuda
def test_host_copy_of_an_accelerator_tensor(devices, accelerator):
    t = (torch.arange(6.0).reshape(2, 3).to(accelerator) * 2).requires_grad_()
    got = devices.host_copy(t)
    assert got.device == torch.device("cpu") and torch.equal(got, torch.arange(6.0).reshape(2, 3) * 2), (
        f"host_copy of a tensor on {t.device} gave {got!r}: a CPU tensor with the same values")
    assert not got.requires_grad and got.grad_fn is None, "host_copy must drop the autograd history (.detach())"


@pytest.mark.cuda
def test_a_model_moved_to_the_accelerator_lives_there(devices, accelerator):
    model = nn.Sequential(nn.Linear(4, 2), nn.ReLU())
    assert model.to(accelerator) is model, "Module.to returns the module itself, moved in place"
    assert devices.device_of(model).type == accelerator.type, (
        f"device_of(model) gave {devices.device_of(model)} after model.to({accelerator}): a module lives where "
        "its parameters are")
    x = torch.ones(3, 4)
    assert devices.device_of(x) == torch.device("cpu"), "torch.ones(...) with no device is made on the CPU"
    assert devices.device_of(x.to(accelerator).float()).type == accelerator.type, (
        ".float() changes the dtype only: the tensor stays on the accelerator")


@pytest.mark.cuda
def test_the_seeds_history_of_device_tensors_needs_to_python(devices, accelerator):
    # The seed: accuracy_hist_train[epoch] += is_correct.sum() on the GPU.
    correct = torch.tensor([True, True, False, True], device=accelerator)
    history = [0 + correct.sum() / 4, 0 + correct.float().mean()]
    with pytest.raises(TypeError, match="can't convert .* device type tensor to numpy"):
        np.asarray(history)  # what matplotlib does with a list it plots
    plain = devices.to_python(history)
    assert plain == [0.75, 0.75] and all(type(v) is float for v in plain), (
        f"to_python of the seed's history of {accelerator.type} tensors gave {plain!r}: plain floats on the host "
        "(.item()), which matplotlib can plot")
    assert np.asarray(plain).tolist() == [0.75, 0.75]


@pytest.mark.cuda
def test_assignment_and_tensor_to_on_the_accelerator(devices, accelerator):
    a = torch.ones(3)
    b = a
    a = a.to(accelerator)
    assert devices.device_of(b) == torch.device("cpu") and devices.device_of(a).type == accelerator.type, (
        "after `b = a; a = a.to(device)`, b still names the CPU tensor and a the new device tensor: assignment "
        "binds a name, it never moves or copies anything")
    assert a.to(accelerator) is a, "Tensor.to the device a tensor is already on returns that very tensor"
    back = a.cpu()
    assert back is not a and devices.device_of(back) == torch.device("cpu"), (
        ".cpu() of a device tensor is a new CPU tensor: a copy in host memory")


@pytest.mark.cuda
def test_pick_device_takes_a_cuda_device_when_there_is_one(devices, accelerator, monkeypatch):
    if accelerator.type != "cuda":
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    got = devices.pick_device()
    assert isinstance(got, torch.device) and got.type == "cuda", (
        f"with CUDA available, pick_device() gave {got!r}: torch.device('cuda')")
