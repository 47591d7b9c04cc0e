"""The simulated accelerator (kata/sim/): a device that PyTorch treats as
not-the-CPU, computing on the CPU, and counting device-to-host synchronisations."""

import copy
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from kata import sim
from kata.harness.target import Target
from kata.project import locate

PROJECT_ROOT = locate().root

MIXING = re.escape("Expected all tensors to be on the same device, but found at least two "
                   "devices, simgpu:0 and cpu!")
NUMPY = re.escape("can't convert simgpu:0 device type tensor to numpy. Use Tensor.cpu() to "
                  "copy the tensor to host memory first.")


@pytest.fixture(scope="module")
def dev():
    ok, why = sim.support()
    if not ok:
        pytest.skip(why)
    return sim.install()


@pytest.fixture(scope="module")
def solutions():
    return Target(locate().solutions)


def tiny_model():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Dropout(0.5), nn.Flatten(), nn.Linear(4 * 4 * 4, 1), nn.Sigmoid())


def tiny_loaders(n_train=20, n_valid=12):
    g = torch.Generator().manual_seed(7)
    x = torch.rand(n_train + n_valid, 3, 8, 8, generator=g)
    y = (torch.rand(n_train + n_valid, generator=g) > 0.5).long()
    train = TensorDataset(x[:n_train], y[:n_train])
    valid = TensorDataset(x[n_train:], y[n_train:])
    return DataLoader(train, 8, shuffle=True), DataLoader(valid, 8)


# --------------------------------------------------------------------------- opting in

def test_install_is_idempotent_and_names_the_device(dev):
    assert sim.install() == dev == torch.device("simgpu:0") and str(dev) == "simgpu:0"
    assert sim.is_sim(dev) and sim.is_sim("simgpu") and sim.is_sim(torch.ones(1, device=dev))
    assert not sim.is_sim("cpu") and not sim.is_sim(torch.ones(1)) and not sim.is_sim(1.0)
    assert sim.is_sim(nn.Linear(1, 1).to(dev)) and not sim.is_sim(nn.Linear(1, 1))
    with sim.active() as same:
        assert same == dev and torch.accelerator.is_available() and torch.simgpu.is_available()
    assert not torch.simgpu.is_available() and not torch.accelerator.is_available()


def test_support_says_which_torch_versions_the_simulator_runs_on(monkeypatch):
    monkeypatch.delenv("KATA_SIM_UNTESTED", raising=False)
    for version in ("2.14.1", "2.14.1+cu130", "2.13.0+cpu", "2.12.1+cu130", "2.11.0"):
        assert sim.support(version) == (True, f"torch {version}: verified")
    for version in ("2.10.0", "2.1.0", "1.13.1"):  # major.minor compared, not a prefix
        assert sim.support(version) == (
            False, f"the simulated accelerator supports torch 2.11 to 2.14; this is torch {version}")
    for version in ("2.15.0", "3.0.0"):  # newer than any verified: refused, with the way to try it
        assert sim.support(version) == (
            False, f"the simulated accelerator supports torch 2.11 to 2.14; this is torch {version} "
                   f"(a newer torch may work: KATA_SIM_UNTESTED=1 tries it)")
    monkeypatch.setenv("KATA_SIM_UNTESTED", "1")
    assert sim.support("2.15.0") == (True, "torch 2.15.0: unknown, tried because KATA_SIM_UNTESTED is set")
    # This torch: the version, every internal the simulator uses, and a free (or our own) backend.
    monkeypatch.delenv("KATA_SIM_UNTESTED")
    assert sim.support() == (True, f"torch {torch.__version__}: verified")
    # A torch that lost one of them (a later release, say) is refused, by name.
    from torch.utils import backend_registration

    monkeypatch.delattr(backend_registration, "_setup_privateuseone_for_python_backend")
    assert sim.support() == (False, f"the simulated accelerator needs PyTorch internals that torch "
                                    f"{torch.__version__} lacks: "
                                    f"torch.utils.backend_registration._setup_privateuseone_for_python_backend")


def test_every_private_torch_name_is_used_in_the_compat_module_only():
    package = Path(sim.__file__).parent
    private = re.compile(r"torch(\.\w+)*\._(?!_)\w|\._op_dk\b|_make_wrapper_subclass")
    for module in package.glob("*.py"):
        code = [line for line in module.read_text().splitlines()
                if not line.lstrip().startswith("#") and "``" not in line]
        uses = [line for line in code if private.search(line)]
        assert bool(uses) == (module.name == "_compat.py"), (module.name, uses)


UNSUPPORTED_SCRIPT = r"""
import torch
torch.__version__ = "2.10.0"
from kata import sim
ok, why = sim.support()
try:
    sim.install()
except RuntimeError as err:
    print(ok, "|", why, "|", err)
"""


def test_install_on_an_unsupported_torch_raises_runtimeerror_with_supports_reason():
    run = subprocess.run([sys.executable, "-c", UNSUPPORTED_SCRIPT], capture_output=True, text=True,
                         timeout=120, cwd=PROJECT_ROOT, env={**os.environ, "KATA_SIM_UNTESTED": ""})
    assert run.returncode == 0, run.stderr
    ok, why, error = run.stdout.strip().split(" | ")
    assert ok == "False" and why == "the simulated accelerator supports torch 2.11 to 2.14; this is torch 2.10.0"
    assert error == f"kata.sim can't install: {why}"


OPT_OUT_SCRIPT = r"""
import json, torch
from torch.utils._python_dispatch import _get_current_dispatch_mode
from kata import sim

def state():
    x = torch.arange(6.).reshape(2, 3)
    y = x @ x.T + torch.tensor(1.)
    return dict(cuda=torch.cuda.is_available(), accelerator=torch.accelerator.is_available(),
                mps=torch.backends.mps.is_available(), result=y.tolist(), type=type(y).__name__,
                factory=str(torch.tensor([1.]).device), zeros=str(torch.zeros(2).device),
                default=str(torch.get_default_device()), mode=repr(_get_current_dispatch_mode()),
                function_modes=torch._C._len_torch_function_stack(), copy=x.cpu() is x)

out = dict(imported=state(), backend=torch._C._get_privateuse1_backend_name(),
           has_module=hasattr(torch, "simgpu"))
sim.install()
out["installed"] = state()
with sim.active():
    out["active"] = torch.accelerator.is_available()
out["after"] = state()
print(json.dumps(out))
"""


def test_opting_in_leaves_plain_cpu_code_and_real_devices_alone():
    # A fresh process: importing does nothing; installing changes nothing for CPU tensors,
    # no mode is ever pushed, and torch.cuda is untouched.
    run = subprocess.run([sys.executable, "-c", OPT_OUT_SCRIPT], capture_output=True,
                         text=True, timeout=120, cwd=PROJECT_ROOT)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["backend"] == "privateuseone" and not out["has_module"]
    before = out["imported"]
    assert before["mode"] == "None" and before["function_modes"] == 0
    for later in (out["installed"], out["after"]):
        assert later["cuda"] == before["cuda"] and later["mps"] == before["mps"]
        assert later["accelerator"] is False  # the simulator reports itself only inside active()
        for key in ("result", "type", "factory", "zeros", "default", "mode", "function_modes", "copy"):
            assert later[key] == before[key], key
    assert before["type"] == "Tensor" and before["factory"] == before["zeros"] == "cpu"
    assert out["active"] is True


# --------------------------------------------------------------------------- where tensors live

def test_copies_views_and_factories_behave_as_on_a_gpu(dev):
    t = torch.tensor([1.0, 2.0, 3.0], device=dev)
    assert t.device == dev and type(t) is sim.SimTensor
    assert torch.tensor([1.0]).device.type == "cpu"  # no device: the CPU
    assert torch.tensor([t[0], t[1]]).tolist() == [1.0, 2.0]  # device scalars read to the host
    host = t.cpu()
    assert type(host) is torch.Tensor and host.device.type == "cpu"
    host[0] = -1.0  # a copy: the device tensor is unchanged
    assert t[0].item() == 1.0
    assert t.to("cpu") is not t.to("cpu")
    assert t.to(dev) is t and t.to("simgpu") is t and t.to("simgpu:0") is t
    assert t.to(dev, copy=True) is not t
    assert t.float() is t  # already float: PyTorch returns the tensor itself
    assert t.double().device == dev and t.long().device == dev and (t > 1).float().device == dev
    assert torch.zeros((), device=dev).device == dev
    assert torch.arange(4, device=dev).tolist() == [0, 1, 2, 3]
    assert torch.full((2,), 3.0, device=dev).device == dev
    assert torch.zeros_like(t).device == dev and torch.ones_like(torch.ones(2), device=dev).device == dev
    assert torch.empty_like(t, device="cpu").device.type == "cpu"
    assert t.new_zeros(2).device == dev and torch.ones(2).simgpu().device == dev
    torch.manual_seed(3)
    on_device = torch.randn(4, device=dev)
    torch.manual_seed(3)
    assert torch.equal(on_device.cpu(), torch.randn(4))  # the CPU's generator
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.zeros(1, device="simgpu:1")


def test_in_place_ops_views_and_out_tensors_keep_the_wrapper_in_step(dev):
    t = torch.zeros(2, 3, device=dev)
    row = t[1]
    row += 5
    assert t.tolist() == [[0, 0, 0], [5, 5, 5]]
    out = torch.empty(0, device=dev)
    torch.add(torch.ones(4, device=dev), 1, out=out)  # resizes `out`
    assert out.shape == (4,) and out.tolist() == [2.0] * 4
    assert t.t_().shape == (3, 2) and t.is_contiguous() is False


def test_repr_prints_like_a_device_tensor(dev):
    assert repr(torch.tensor([1.0, 2.0], device=dev)) == "tensor([1., 2.], device='simgpu:0')"
    two_d = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev)
    assert str(two_d) == "tensor([[1., 2.],\n        [3., 4.]], device='simgpu:0')"
    x = torch.tensor(0.5, device=dev, requires_grad=True)
    assert repr(x * 2) == "tensor(1., device='simgpu:0', grad_fn=<MulBackward0>)"
    assert f"{x.detach():.2f}" == "0.50"
    layer = nn.Linear(1, 1).to(dev)
    assert repr(layer.bias).startswith("Parameter containing:\ntensor([")
    assert repr(layer.bias).endswith("], device='simgpu:0', requires_grad=True)")


def test_cuda_syncs_are_counted_from_the_sync_debug_modes_warnings_alone(monkeypatch):
    # As on an H200 (docs/gpu-report.md): the first "warn" of a process warns that the mode is a prototype,
    # which is no sync; each sync warns "called a synchronizing CUDA operation" at the line that asked.
    import warnings

    def set_mode(mode):
        if mode == "warn":
            warnings.warn("Synchronization debug mode is a prototype feature and does not yet detect all "
                          "synchronizing operations", UserWarning, stacklevel=1)

    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", set_mode)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        with sim.count_cuda_syncs() as syncs:
            for _ in range(2):   # each sync counts, not only a line's first (as "default" would show)
                line = sys._getframe().f_lineno + 1
                warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)
                assert syncs.events[-1] == ("sync", f"{__file__}:{line}")   # as it happens: a DataLoader pass reads it
            warnings.warn("an unrelated warning", UserWarning, stacklevel=1)
            warnings.simplefilter("ignore")   # as a script or notebook may: its own warnings go, CUDA's syncs stay
            warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)
            warnings.warn("another unrelated warning", UserWarning, stacklevel=1)
    assert syncs.total == 3 and syncs.by_kind == {"sync": 3}
    assert [str(w.message) for w in shown] == ["an unrelated warning"]   # the block's own, shown; not the notice


# --------------------------------------------------------------------------- errors

def test_mixing_devices_raises_pytorchs_error(dev, solutions):
    model = solutions.load("model").build_model().to(dev)
    with pytest.raises(RuntimeError, match=re.escape(  # a convolution words it as CUDA's does
            "Input type (torch.FloatTensor) and weight type (torch.simgpu.FloatTensor) should be the same or input "
            "should be a MKLDNN tensor and weight is a dense tensor")):
        model(torch.rand(2, 3, 64, 64))  # a CPU batch
    with pytest.raises(RuntimeError, match=re.escape(
            "Input type (torch.simgpu.FloatTensor) and weight type (torch.FloatTensor) should be the same")):
        nn.Conv2d(3, 1, 3)(torch.rand(1, 3, 8, 8, device=dev))
    t = torch.ones(3, device=dev)
    for mix in (lambda: t + torch.ones(3), lambda: torch.ones(3) + t.sum(),
                lambda: torch.stack([t.sum(), torch.tensor(1.0)]), lambda: nn.Linear(3, 1).to(dev)(torch.ones(3)),
                lambda: nn.BCELoss()(t.sigmoid(), torch.ones(3))):
        with pytest.raises(RuntimeError, match=MIXING):
            mix()
    with pytest.raises(RuntimeError, match=re.escape(   # the dispatcher's check, as on an H200 (docs/gpu-report.md)
            "Expected all tensors to be on the same device, but got other is on cpu, different from other tensors on "
            "simgpu:0 (when checking argument in method wrapper_CUDA__equal)")):
        torch.equal(t, t.cpu())
    with pytest.raises(RuntimeError, match=re.escape(   # a batch too small for MKLDNN: the slow kernel's check
            "Expected all tensors to be on the same device, but got weight is on simgpu:0, different from other "
            "tensors on cpu (when checking argument in method wrapper_CUDA___slow_conv2d_forward)")):
        nn.Conv2d(3, 2, 3).to(dev)(torch.ones(1, 3, 8, 8))
    # What CUDA allows: a 0-d CPU tensor as a scalar operand, Python numbers, copies both
    # ways, CPU index tensors.
    assert (t + torch.tensor(2.0)).tolist() == [3.0] * 3 and (t * 2).device == dev
    assert torch.where(t > 0, t, torch.tensor(0.0)).device == dev
    t.copy_(torch.tensor([1.0, 2.0, 3.0]))
    assert t[torch.tensor([0, 2])].tolist() == [1.0, 3.0]
    with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same device"):
        torch.ones(3)[torch.tensor([0], device=dev)]


def test_a_cpu_scalar_is_an_input_never_the_output_of_an_op_on_device_tensors(dev):
    # The seed's sync loop with its sums in CPU scalars: it crashes on CUDA, so it must here.
    s = torch.tensor(0.0)
    for write in (lambda: s.__iadd__(torch.ones(3, device=dev).sum()), lambda: s.add_(torch.ones((), device=dev)),
                  lambda: torch.add(torch.ones((), device=dev), 1, out=s),
                  lambda: torch.mul(torch.ones(3, device=dev), 2, out=torch.empty(3))):
        with pytest.raises(RuntimeError, match=MIXING):
            write()
    assert s.item() == 0.0
    s = s + torch.ones(3, device=dev).sum()  # out of place: a new tensor, on the device
    assert s.device == dev and s.item() == 3.0
    d = torch.zeros((), device=dev)
    d += torch.tensor(1.0)  # the CPU scalar as an input: fine
    assert d.device == dev and d.item() == 1.0



def test_cpu_scalars_go_where_cuda_takes_them_beyond_the_tables_rows(dev):
    # (The table's "0-d CPU tensors" rows hold the main rules; these are the rest of them.)
    c = torch.tensor(2.0)
    x = torch.ones(3, device=dev, requires_grad=True)
    (x * c).sum().backward()  # a binary op and its backward, each with the CPU scalar: one, an input
    assert x.grad.device == dev and x.grad.tolist() == [2.0, 2.0, 2.0]
    for fine in (lambda: torch.clamp_min(torch.ones(3, device=dev), c), lambda: torch.ones(3, device=dev).eq_(c),
                 lambda: torch.floor_divide(torch.ones(3, device=dev), c),
                 lambda: nn.functional.mse_loss(torch.ones((), device=dev), c),
                 lambda: torch._foreach_mul([torch.ones(3, device=dev)], c)[0]):
        assert fine().device == dev
    for refused in (lambda: torch.neg(c, out=torch.empty((), device=dev)),  # a unary op: none
                    lambda: torch.addcdiv(torch.ones(3, device=dev), torch.ones(3, device=dev), c),
                    lambda: torch.ones(3, device=dev).clamp(c, torch.tensor(3.0)),
                    lambda: torch.ones((), device=dev).gather(0, torch.tensor(0))):  # not TensorIterator's
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            refused()
    with pytest.raises(RuntimeError, match="CPU Scalar support for self argument is not supported"):
        torch.addcmul(c, torch.ones(3, device=dev), torch.ones(3, device=dev))
    with pytest.raises(RuntimeError, match="expected self and mask to be on the same device"):
        torch.ones(3, device=dev).masked_fill_(torch.tensor([True, False, True]), 0.0)

def test_numpy_and_matplotlib_raise_the_type_error_a_cuda_tensor_raises(dev):
    t0, t1 = torch.tensor(0.5, device=dev), torch.tensor(0.75, device=dev)
    ax = Figure().add_subplot()
    FigureCanvasAgg(ax.figure)
    for convert in (t0.numpy, lambda: np.asarray(t0), lambda: np.array([t0, t1]),
                    lambda: ax.plot([t0, t1]), lambda: ax.plot([1, 2], [t0, t1]),
                    lambda: torch.stack([t0, t1]).numpy()):
        with pytest.raises(TypeError, match=NUMPY):
            convert()
    # What works on CUDA works here: Python numbers, host copies.
    assert float(t0) == 0.5 and type(float(t0)) is float and t1.item() == 0.75
    assert int(torch.tensor(3, device=dev)) == 3 and bool(t0) is True
    assert np.asarray(t0.cpu()) == 0.5 and t0.numpy(force=True) == 0.5
    assert ax.plot([t0.item(), t1.item()])


# --------------------------------------------------------------------------- syncs

def test_syncs_are_counted_per_kind(dev):
    t = torch.tensor([1.0, 2.0, 3.0], device=dev)
    s = t.sum()
    host, ind_cpu, mask_cpu = torch.ones(3), torch.tensor([0, 2]), torch.tensor([True, False, True])
    with sim.count_syncs() as syncs:
        s.item()
        float(s), int(s), bool(s)
        t.cpu(), t.to("cpu"), t.detach().to("cpu", copy=True)
        torch.zeros(3).copy_(t)
        t.tolist()
        with pytest.raises(TypeError):
            t.numpy()
        with pytest.raises(TypeError):
            np.asarray(t)
        repr(t), str(s), f"{s:.1f}"
        torch.equal(t, t + 1)
        t[t > 1], t[ind_cpu]
        # blocking copies from the host: CUDA synchronizes the stream after each (memcpy_and_sync)
        host.to(dev), torch.tensor([1.0], device=dev), t.copy_(host)
        # none of these is a sync:
        host.to(dev, non_blocking=True), t.to("cpu", non_blocking=True), t[mask_cpu], torch.zeros((), device=dev)
        t.float(), t.to(dev), t + 1, (t > 1).float().sum(), torch.stack([s, s]), t.shape
        copy.deepcopy(t), t.clone()
        torch.equal(t, t), torch.equal(t, t[:2])   # the same view, other sizes: answered without the device
    assert syncs.by_kind == {"item": 1, "float": 1, "int": 1, "bool": 1, "cpu": 4, "tolist": 1,
                             "numpy": 2, "repr": 3, "equal": 1, "index": 1, "to_device": 4}
    assert syncs.total == 20
    assert all(where.startswith(__file__ + ":") for kind, where in syncs.events)


def test_a_non_blocking_copy_to_the_host_arrives_at_the_next_sync(dev):
    t = torch.tensor([1.0, 2.0], device=dev)
    early = t.to("cpu", non_blocking=True)  # CUDA: queued; the host may read it before it lands
    assert early.device.type == "cpu" and all(math.isnan(v) for v in early.tolist())
    torch.simgpu.synchronize()
    assert early.tolist() == [1.0, 2.0]
    counts = torch.arange(3, device=dev).to("cpu", non_blocking=True)
    assert counts.tolist() == [0, 0, 0]  # integers read 0 until then
    t.sum().item()  # any sync lands it
    assert counts.tolist() == [0, 1, 2]
    into = torch.zeros(2)
    into.copy_(t * 3, non_blocking=True)
    assert torch.ones(2).to(dev).cpu().tolist() == [1.0, 1.0] and into.tolist() == [3.0, 6.0]
    with sim.count_syncs() as syncs:   # no sync, but each copy's line is told (a check names it)
        t.to("cpu", non_blocking=True), into.copy_(t, non_blocking=True)
    assert syncs.total == 0 and len(syncs.copies) == 2
    assert all(where.startswith(__file__ + ":") for where in syncs.copies)
    syncs.reset()
    assert syncs.copies == []


def test_sync_counters_nest_reset_and_ignore_cpu_tensors(dev):
    t = torch.ones(2, device=dev)
    with sim.count_syncs() as outer:
        t.sum().item()
        with sim.count_syncs() as inner:
            t.tolist()
            torch.ones(2).sum().item(), torch.ones(2).tolist(), repr(torch.ones(2))  # CPU: none
        t.cpu()
    assert inner.by_kind == {"tolist": 1} and outer.by_kind == {"item": 1, "tolist": 1, "cpu": 1}
    outer.reset()
    assert outer.total == 0 and outer.events == []
    t.sum().item()  # outside any block: nothing to count into
    assert outer.total == 0


def test_with_real_cuda_there_cudas_checkpoints_go_to_cuda_except_inside_active(dev, monkeypatch):
    from kata.sim import _saving

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    fresh = torch.ones(2).untyped_storage
    assert _saving.deserialize(fresh(), "cuda:0") is None  # PyTorch's own CUDA deserializer takes it
    assert _saving.deserialize(fresh(), "simgpu:0").device == dev
    with sim.active():
        assert _saving.deserialize(fresh(), "cuda:0").device == dev
    assert _saving.deserialize(fresh(), "cpu") is None and _saving.deserialize(fresh(), "simgpu:1") is None


# --------------------------------------------------------------------------- the book's loop

def book_steps(build_model, device, steps=2, batch=8):
    torch.manual_seed(1)
    model = build_model().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_fn = nn.BCELoss()
    g = torch.Generator().manual_seed(2)
    x = torch.rand(steps, batch, 3, 64, 64, generator=g)
    y = torch.randint(0, 2, (steps, batch), generator=g)
    losses = []
    for x_batch, y_batch in zip(x, y, strict=True):
        x_batch, y_batch = x_batch.to(device), y_batch.to(device)
        pred = model(x_batch)[:, 0]
        loss = loss_fn(pred, y_batch.float())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, model


def test_the_books_cnn_trains_on_the_device_as_on_the_cpu(dev, solutions):
    build_model = solutions.load("model").build_model
    cpu_losses, cpu_model = book_steps(build_model, "cpu")
    sim_losses, sim_model = book_steps(build_model, dev)
    assert sim_losses == cpu_losses  # the same kernels and random numbers: exactly equal
    assert all(p.device == dev for p in sim_model.parameters())
    for (name, a), b in zip(cpu_model.state_dict().items(), sim_model.state_dict().values(), strict=True):
        assert b.device == dev and torch.equal(a, b.cpu()), name
    clone = copy.deepcopy(sim_model)
    assert all(torch.equal(a, b) and a is not b
               for a, b in zip(clone.parameters(), sim_model.parameters(), strict=True))
    sim_model.eval()
    with torch.no_grad():
        x = torch.rand(2, 3, 64, 64)
        assert torch.equal(sim_model(x.to(dev)).cpu(), cpu_model.eval()(x))


def test_module_to_moves_parameters_in_place(dev):
    model = tiny_model()
    weight = model[0].weight
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)  # made before the move
    model.to(dev)
    assert model[0].weight is weight and isinstance(weight, nn.Parameter) and weight.device == dev
    before = weight.detach().clone()
    model(torch.rand(2, 3, 8, 8, device=dev)).sum().backward()
    optimizer.step()
    assert weight.grad.device == dev and not torch.equal(weight.detach(), before)
    on_cpu = tiny_model()
    on_cpu.load_state_dict(model.state_dict())  # device to host: allowed, as on CUDA
    assert all(torch.equal(a, b.cpu())
               for a, b in zip(on_cpu.parameters(), model.parameters(), strict=True))


def test_inference_mode_makes_inference_tensors_as_a_gpu_does_and_module_to_works_inside(dev):
    # Allocated in inference mode: an inference tensor; a view of a normal tensor made
    # there (detach, view): a normal tensor, as on the CPU and CUDA.
    cpu, sim = torch.ones(3), torch.ones(3, device=dev)
    with torch.inference_mode():
        made = [(cpu + 1, sim + 1), (cpu.detach(), sim.detach()), (cpu.view(3), sim.view(3))]
    assert [(c.is_inference(), s.is_inference()) for c, s in made] == [(True, True), (False, False), (False, False)]
    # An evaluate under @torch.inference_mode() that calls model.to(device), after training.
    model = tiny_model().to(dev)
    weight = model[0].weight
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.rand(2, 3, 8, 8, device=dev)).sum().backward()
    optimizer.step()
    with torch.inference_mode():
        model.to(dev)
        model(torch.rand(2, 3, 8, 8, device=dev))
    assert model[0].weight is weight  # the optimizer still holds the model's parameters
    before = weight.detach().clone()
    optimizer.zero_grad()
    model(torch.rand(2, 3, 8, 8, device=dev)).sum().backward()
    optimizer.step()
    assert not torch.equal(weight.detach(), before)


def test_assigning_data_replaces_what_a_device_tensor_holds(dev):
    x = torch.zeros(3, device=dev)
    x.data = torch.arange(4, dtype=torch.float64, device=dev)
    assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0] and x.dtype == torch.float64 and x.device == dev
    y = torch.ones(2)
    x.data = y  # as on CUDA: the same object, now a CPU tensor sharing y's memory
    assert type(x) is torch.Tensor and x.device.type == "cpu" and x.tolist() == [1.0, 1.0]
    y[0] = 5.0
    assert x[0].item() == 5.0
    with pytest.raises(RuntimeError, match="incompatible tensor type"):  # PyTorch's own refusal
        torch.zeros(1).data = torch.ones(1, device=dev)


def test_module_to_keeps_its_parameters_both_ways_and_their_grads_move(dev):
    model = tiny_model()
    weight = model[0].weight
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to(dev)
    model(torch.rand(2, 3, 8, 8, device=dev)).sum().backward()
    model.to("cpu")
    assert model[0].weight is weight and type(weight) is nn.Parameter and weight.device.type == "cpu"
    assert weight.grad.device.type == "cpu"
    before = weight.detach().clone()
    optimizer.step()  # made before both moves: it still trains the model
    assert not torch.equal(weight.detach(), before)
    model.to(dev)
    with torch.inference_mode():  # an evaluate that moves the model back, say
        model.to("cpu")
    assert model[0].weight is weight and weight.device.type == "cpu"


def test_data_ptr_and_deepcopy_treat_device_memory_as_memory(dev):
    t = torch.arange(4.0, device=dev)
    assert t.data_ptr() != 0 and t.clone().data_ptr() != t.data_ptr()
    assert t[1:].data_ptr() == t.data_ptr() + t.element_size() and t.view(2, 2).data_ptr() == t.data_ptr()
    w = torch.ones(2, device=dev, requires_grad=True)
    (w * 2).sum().backward()
    c = copy.deepcopy(w)
    assert type(c) is sim.SimTensor and c.requires_grad and c.is_leaf and c.grad.tolist() == [2.0, 2.0]
    assert c.data_ptr() != w.data_ptr()
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(w * 2)
    alias = copy.copy(t)  # as a CUDA tensor's reduction rebuilds it: a new tensor over the same memory
    assert type(alias) is sim.SimTensor and alias is not t and alias.data_ptr() == t.data_ptr()


def test_pinning_and_formatting_refuse_as_cuda_does(dev):
    t = torch.ones(2, device=dev)
    assert not t.is_pinned()
    with pytest.raises(RuntimeError, match=re.escape("cannot pin 'torch.simgpu.FloatTensor' only dense CPU tensors "
                                                     "can be pinned")):
        t.pin_memory()
    with pytest.raises(TypeError, match=re.escape("unsupported format string passed to Tensor.__format__")):
        f"{t:.2f}"
    assert f"{t}" == str(t)


# --------------------------------------------------------------------------- torch.save / torch.load

FRESH_LOAD = r"""
import sys, torch
for kwargs in ({}, {"map_location": "cpu"}, {"map_location": torch.device("cpu")}):
    try:
        d = torch.load(sys.argv[1], **kwargs)  # weights_only=True, the default
        print("loaded", d["w"].device, d["w"].tolist(), d["opt"]["state"][0]["exp_avg"].device)
    except RuntimeError as err:
        print("RuntimeError", err)
"""


def test_a_checkpoint_saves_as_cudas_and_loads_where_cuda_would(dev, tmp_path):
    model = nn.Linear(2, 1).to(dev)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 2, device=dev)).sum().backward()
    optimizer.step()
    path = tmp_path / "checkpoint.pt"
    torch.save({"w": torch.arange(3.0, device=dev), "model": model.state_dict(), "opt": optimizer.state_dict(),
                "param": model.weight}, path)
    here = torch.load(path)  # this process has the device: back on it, as CUDA's are
    assert here["w"].device == dev and here["w"].tolist() == [0.0, 1.0, 2.0]
    assert here["opt"]["state"][0]["exp_avg"].device == dev and isinstance(here["param"], nn.Parameter)
    assert torch.load(path, map_location=dev)["w"].device == dev
    on_cpu = torch.load(path, map_location="cpu")
    assert type(on_cpu["w"]) is torch.Tensor and on_cpu["model"]["weight"].device.type == "cpu"
    assert torch.equal(on_cpu["model"]["weight"], model.weight.detach().cpu())
    # A fresh process with no accelerator (the simulator not installed): CUDA's own error, word for word.
    run = subprocess.run([sys.executable, "-c", FRESH_LOAD, str(path)], capture_output=True, text=True,
                         timeout=120, cwd=PROJECT_ROOT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "RuntimeError Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
        "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
        "storages to the CPU.",
        "loaded cpu [0.0, 1.0, 2.0] cpu", "loaded cpu [0.0, 1.0, 2.0] cpu"]


def test_solutions_train_evaluate_and_train_epoch_give_the_cpus_numbers(dev, solutions):
    training, sync = solutions.load("training"), solutions.load("sync")
    histories, evaluations, epochs, counts = {}, {}, {}, {}
    for device in ("cpu", dev):
        torch.manual_seed(0)
        model = tiny_model()
        train_dl, valid_dl = tiny_loaders()
        with sim.count_syncs() as syncs:
            histories[str(device)] = training.train(model, 2, train_dl, valid_dl, device=device)
            evaluations[str(device)] = training.evaluate(model, valid_dl)
        counts[str(device), "train"] = dict(syncs.by_kind)
        assert all(p.device == torch.device(device) for p in model.parameters())
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
        with sim.count_syncs() as syncs:
            epochs[str(device)] = sync.train_epoch(model, train_dl, nn.BCELoss(), optimizer, device)
        counts[str(device), "epoch"] = dict(syncs.by_kind)
    assert histories["simgpu:0"] == histories["cpu"]
    assert all(type(v) is float for h in histories["simgpu:0"] for v in h)
    assert evaluations["simgpu:0"] == evaluations["cpu"]
    assert epochs["simgpu:0"] == epochs["cpu"]
    # The CPU has nothing to count; the book's loop syncs twice per batch (3 training and
    # 2 validation batches, 2 epochs, then 2 batches in evaluate); train_epoch once per epoch.
    assert counts["cpu", "train"] == counts["cpu", "epoch"] == {}
    # train's blocking batch copies are syncs too (x and y of each batch, and the model's 4 tensors moved in train)
    assert counts["simgpu:0", "train"] == {"item": 2 * (3 + 2) * 2 + 2 * 2, "to_device": 2 * 24 // 2 + 4}
    assert counts["simgpu:0", "epoch"] == {"tolist": 1}  # train_epoch copies with non_blocking=True


def test_the_simulator_costs_at_most_one_and_a_half_times_the_cpu(dev, solutions):
    """One training step of the book's CNN on a batch of 32x3x64x64, the CPU and the
    device alternating; the fastest of 4 steps each (the least disturbed by other
    load). A burst of load can still skew one try, so up to 3 tries: a real slowdown
    fails them all."""
    build_model = solutions.load("model").build_model
    x, y = torch.rand(32, 3, 64, 64), torch.randint(0, 2, (32,))
    setups = {}
    for device in ("cpu", dev):
        model = build_model().to(device)
        setups[device] = (model, torch.optim.Adam(model.parameters(), lr=0.001))

    def step(device):
        model, optimizer = setups[device]
        start = time.perf_counter()
        pred = model(x.to(device))[:, 0]
        loss = nn.BCELoss()(pred, y.to(device).float())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss.item()
        return time.perf_counter() - start

    step("cpu"), step(dev)  # warm-up
    ratios = []
    for _ in range(3):
        times = {"cpu": [], dev: []}
        for _ in range(4):
            for device in ("cpu", dev):
                times[device].append(step(device))
        ratios.append(min(times[dev]) / min(times["cpu"]))
        print(f"simgpu/cpu: {ratios[-1]:.3f} "
              f"({min(times[dev]) * 1e3:.0f} ms / {min(times['cpu']) * 1e3:.0f} ms)")
        if ratios[-1] <= 1.5:
            break
    assert min(ratios) <= 1.5, ratios


# --- torch.autocast on the device: CUDA's rules, held to this torch's own CUDA kernels ----------------------------

# The ops CUDA's autocast has a kernel for that the device never runs: cuDNN's own (a convolution or an RNN reaches
# them only on CUDA, and each of their callers is in the table).
CUDNN_ONLY = {"cudnn_convolution", "cudnn_convolution_transpose", "_cudnn_rnn"}


def test_the_device_autocasts_the_ops_this_torchs_cuda_autocast_casts():
    from kata.sim._autocast import POLICIES, taken

    cudas = {name[len("aten::"):] for name in torch._C._dispatch_get_all_op_names() if name.startswith("aten::")
             and torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastCUDA")} - CUDNN_ONLY
    ours = {name for names in POLICIES.values() for name in names}
    assert not cudas - ours, f"CUDA autocasts these ops on torch {torch.__version__}; add each to " \
                             f"kata/sim/_autocast.py's POLICIES, with its policy: {sorted(cudas - ours)}"
    assert {name for name in ours if taken(name)} == cudas   # and the device leaves the others alone, as CUDA does


def _outcome(call, tensors):
    """What ``call`` gives on ``tensors``: its dtype (as str), or that it raised; autocast's own refusal by its words
    (fake tensors run meta kernels, whose words for a wrong dtype are not always the real kernels')."""
    try:
        return str(call(*tensors).dtype)
    except (RuntimeError, TypeError, ValueError) as err:
        return f"refused: {str(err).splitlines()[0]}" if "autocast" in str(err) else "raised"


def _as_cuda_does(call, inputs, dtype):
    """The outcome of ``call`` under CUDA's own autocast kernels, run on fake CUDA tensors: no GPU needed, nor a
    torch built for CUDA (the kernels are in every build; a fake tensor is made on cuda, never moved there)."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        torch.set_autocast_enabled("cuda", True)
        torch.set_autocast_dtype("cuda", dtype)
        try:
            return _outcome(call, [FakeTensor(mode, t.to("meta"), torch.device("cuda")) for t in inputs])
        finally:
            torch.set_autocast_enabled("cuda", False)
            torch.set_autocast_dtype("cuda", torch.float16)


AUTOCAST_CALLS = {   # (the call, how many tensors it takes), one or more of each policy, and a few others
    "linear": (lambda x, w: F.linear(x.reshape(1, 4), w.reshape(1, 4)), 2),
    "conv2d": (lambda x: F.conv2d(x.reshape(1, 1, 2, 2), x.reshape(1, 1, 2, 2)), 1),
    "matmul": (lambda x, y: x.reshape(2, 2) @ y.reshape(2, 2), 2),
    "softmax": (lambda x: torch.softmax(x, 0), 1),
    "log_softmax, float16 asked": (lambda x: torch.log_softmax(x, 0, dtype=torch.float16), 1),
    "sum": (lambda x: x.sum(), 1),
    "cumsum": (lambda x: x.cumsum(0), 1),
    "norm": (lambda x: x.norm(), 1),
    "exp": (lambda x: x.exp(), 1),
    "pow": (lambda x, y: x ** y, 2),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), 2),
    "layer_norm": (lambda x: F.layer_norm(x, (4,)), 1),
    "binary_cross_entropy": (lambda x, y: F.binary_cross_entropy(x.sigmoid(), y.sigmoid()), 2),
    "binary_cross_entropy_with_logits": (lambda x, y: F.binary_cross_entropy_with_logits(x, y), 2),
    "addcmul": (lambda x, y, z: torch.addcmul(x, y, z), 3),
    "atan2": (lambda x, y: torch.atan2(x, y), 2),
    "cat": (lambda x, y: torch.cat([x, y]), 2),
    "add": (lambda x, y: x + y, 2),
    "relu": (lambda x: torch.relu(x), 1),
    "bmm": (lambda x, y: torch.bmm(x.reshape(1, 2, 2), y.reshape(1, 2, 2)), 2),
    "prod, dim": (lambda x: x.prod(0), 1),
    "cdist": (lambda x, y: torch.cdist(x.reshape(2, 2), y.reshape(2, 2)), 2),
    "dot": (lambda x, y: torch.dot(x, y), 2),
}
# Each op of one tensor that CUDA autocasts to float32, called as torch.NAME(x).
AUTOCAST_CALLS.update({name: (lambda x, name=name: getattr(torch, name)(x), 1) for name in (
    "acos", "asin", "cosh", "erfinv", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh", "tan")})
# The dtypes drawn: those autocast casts between (a float64 or integer input is not eligible, and its mix with a
# cast one fails in a real kernel where a fake tensor's meta kernel may let it pass: the examples hold those alone).
DRAWN = (torch.float16, torch.bfloat16, torch.float32)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(AUTOCAST_CALLS)), region=st.sampled_from([torch.float16, torch.bfloat16]),
       dtypes=st.lists(st.sampled_from(DRAWN), min_size=3, max_size=3), seed=st.integers(0, 2**16))
@example(name="linear", region=torch.float16, dtypes=[torch.float32] * 3, seed=0)
@example(name="binary_cross_entropy", region=torch.float16, dtypes=[torch.float32] * 3, seed=0)
@example(name="addcmul", region=torch.float16, dtypes=[torch.float16, torch.float16, torch.float32], seed=0)
@example(name="addcmul", region=torch.float16, dtypes=[torch.bfloat16, torch.float16, torch.float16], seed=0)
@example(name="sum", region=torch.bfloat16, dtypes=[torch.bfloat16] * 3, seed=0)
@example(name="linear", region=torch.float16, dtypes=[torch.float64] * 3, seed=0)
@example(name="sum", region=torch.float16, dtypes=[torch.int64] * 3, seed=0)
@example(name="softmax", region=torch.float16, dtypes=[torch.float64] * 3, seed=0)
def test_autocast_on_the_device_gives_the_dtypes_cudas_autocast_gives(dev, name, region, dtypes, seed):
    """Any of these calls, on inputs of any dtype, in an autocast region of either dtype: the device gives what
    CUDA's own autocast kernels give (run on fake CUDA tensors), dtype or error; and outside the region, or on the
    CPU inside it, what the CPU gives."""
    call, n = AUTOCAST_CALLS[name]
    generator = torch.Generator().manual_seed(seed)
    inputs = [(torch.rand(4, generator=generator) * 4 - 2).to(dtype) for dtype in dtypes[:n]]
    want = _as_cuda_does(call, inputs, region)
    on_dev = [t.to(dev) for t in inputs]
    with torch.autocast(sim.NAME, dtype=region):
        assert _outcome(call, on_dev) == want, (name, region, dtypes[:n])
        plain_cpu = _outcome(call, inputs)
    assert plain_cpu == _outcome(call, inputs) == _outcome(call, on_dev)


# --- recurrent layers: the fused cells a device runs (kata/sim/_cells.py) ----------------------------------------


@pytest.mark.parametrize("layer", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("bias", [True, False])
def test_a_recurrent_layer_on_the_device_computes_what_the_cpus_computes(dev, layer, bias):
    """nn.LSTM and nn.GRU run fused cells on a device (CUDA's kernels, which the CPU lacks: the simulator computes
    them): the outputs, the last states and every gradient (the weights', the input's, the first state's) are the
    CPU's own unfused layer's, two layers deep, batch first, from a given first state."""
    torch.manual_seed(3)
    cpu = layer(4, 5, num_layers=2, bias=bias, batch_first=True)
    on = copy.deepcopy(cpu).to(dev)
    x, h0 = torch.randn(3, 6, 4), torch.randn(2, 3, 5)
    first = (h0, torch.randn(2, 3, 5)) if layer is nn.LSTM else h0
    grads = {}
    for where, model in (("cpu", cpu), ("dev", on)):
        xs = x.to(dev if where == "dev" else "cpu").detach().requires_grad_()
        states = tuple(s.to(xs.device).detach().requires_grad_() for s in (first if layer is nn.LSTM else (first,)))
        y, last = model(xs, states if layer is nn.LSTM else states[0])
        h = last[0] if layer is nn.LSTM else last
        (y.pow(2).sum() + h.sum() + (last[1].sum() if layer is nn.LSTM else 0)).backward()
        assert y.device == xs.device
        grads[where] = [y, h, xs.grad, *(s.grad for s in states), *(p.grad for p in model.parameters())]
    for a, b in zip(grads["cpu"], grads["dev"]):
        assert torch.allclose(a, b.cpu(), atol=1e-5), (a, b)
