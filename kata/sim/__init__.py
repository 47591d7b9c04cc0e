"""A simulated accelerator, ``simgpu``: a device that is not the CPU as far as
PyTorch's device checks go, while it computes on the CPU.

It lets the kata's checks catch the mistakes of the learner's note (a history of
device tensors handed to matplotlib, a CPU batch fed to a model on the device,
one ``.item()`` per batch) on machines without a GPU, and count device-to-host
synchronisations.

API (``from kata import sim``)::

    support() -> (ok: bool, reason: str)
                                       # whether this torch and process can have the device;
                                       # reason is one line ("the simulated accelerator supports
                                       # torch 2.11 to 2.14; this is torch 2.10.0")
    install() -> torch.device          # idempotent; torch.device("simgpu:0"); RuntimeError
                                       # with support()'s reason where it can't
    active() -> ContextManager[torch.device]
                                       # install(), and torch.simgpu.is_available()
                                       # (so torch.accelerator.is_available()) is True inside
    count_syncs() -> ContextManager[Syncs]
                                       # .total, .by_kind {kind: n}, .events [(kind, "file:line")], .reset()
    is_sim(obj) -> bool                # a simgpu tensor, module (by its first parameter),
                                       # torch.device or device string
    NAME = "simgpu"; SimTensor         # the tensor class of the device's tensors

Usage::

    from kata import sim
    dev = sim.install()
    model = build_model().to(dev)                    # moves the parameters in place
    with sim.count_syncs() as syncs:
        loss = loss_fn(model(x.to(dev))[:, 0], y.to(dev).float()); loss.item()
    assert syncs.by_kind == {"item": 1}

What behaves as on a real GPU (CUDA):

- ``t.device`` is ``simgpu:0``; ``x.to(dev)`` copies to it; ``t.to(dev)`` of a tensor
  already there returns ``t`` itself; ``.float()`` and other dtype casts keep the
  device; ``t.cpu()`` / ``t.to("cpu")`` returns a new CPU tensor (a copy);
  ``torch.zeros(..., device=dev)``, ``torch.tensor(..., device=dev)``,
  ``torch.arange(..., device=dev)``, ``torch.randn(..., device=dev)`` and the
  ``*_like`` factories make device tensors; ``torch.tensor([...])`` with no device
  is a CPU tensor.  ``t.simgpu()``, ``t.is_simgpu`` and ``model.simgpu()`` work like ``.cuda()``.
- ``Module.to(dev)`` moves the parameters in place (the same ``Parameter``
  objects, now of class :class:`SimTensor`; ``isinstance(p, nn.Parameter)`` stays
  True); autograd, ``BCELoss``, ``torch.optim.Adam``, ``torch.no_grad()``,
  ``state_dict()``, ``load_state_dict()`` and ``copy.deepcopy(model)`` work.
- Mixing devices raises ``RuntimeError: Expected all tensors to be on the same
  device, but found at least two devices, simgpu:0 and cpu!``.  A 0-d CPU tensor
  passed directly as an operand is a scalar, as on CUDA (``sim_t + torch.tensor(2.)``
  works); copies (``copy_``, ``.to``) and CPU index tensors may cross devices.
- ``t.numpy()``, ``np.asarray(t)``, ``np.array([t0, t1])`` and matplotlib's
  ``ax.plot([t0, t1])`` raise ``TypeError: can't convert simgpu:0 device type
  tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.``
  (PyTorch's own check); ``float(t)``, ``int(t)``, ``bool(t)``, ``t.item()``,
  ``t.tolist()`` and ``print(t)`` work and return host values, as on CUDA.

Synchronisations counted, by kind (in a :func:`count_syncs` block):
``"item"`` (``t.item()``, and ``.item()`` inside library code such as
``torch.allclose``), ``"float"`` / ``"int"`` / ``"bool"`` (``float(t)``,
``int(t)``/``operator.index(t)``, ``bool(t)`` and ``if t:``), ``"cpu"``
(``t.cpu()``, ``t.to("cpu")``, ``cpu_t.copy_(t)``, ``numpy(force=True)``),
``"tolist"``, ``"numpy"`` (every attempt, failing or not: ``t.numpy()``,
``np.asarray(t)``), ``"repr"`` (``repr``/``str``/``print``/``format`` of a device
tensor), and ops whose result size or value the host must read:
``"equal"`` (``torch.equal``), ``"nonzero"``, ``"masked_select"``, ``"unique"``,
``"index"`` (indexing with a boolean mask).  One Python-level call counts once.
Host-to-device copies are not syncs.

How it works: PyTorch's PrivateUse1 backend is renamed ``simgpu`` and made a
Python backend by torch's own helper for that (in ``torch.utils.backend_registration``).
A device tensor is a wrapper tensor subclass (:class:`SimTensor`) with the device
``simgpu:0`` and no storage of its own; it holds a plain CPU tensor.  Its
``__torch_dispatch__`` (below autograd, so autograd works unchanged) checks the
devices, unwraps to the CPU tensors, runs the same CPU kernel and wraps the
results.  Factory calls that name the device (``torch.zeros(..., device=dev)``,
and the ``empty`` inside ``cpu_t.to(dev)``) reach a few PrivateUse1 kernels
registered from Python that do the same.  No dispatch or torch-function mode
is ever pushed, so plain CPU tensors and real devices never see this code.
Overhead: about 15 us of Python per op (about 140 ops per training step of the
book's CNN), within a few per cent of the CPU's time for that step.

Which torch: the simulator uses a few PyTorch internals (all in
``kata/sim/_compat.py``, with the table of torch versions).  It runs on torch 2.11
to 2.14 (its self-tests pass on each); elsewhere :func:`support` says so in one
line and :func:`install` raises RuntimeError with that line, and the rest of the
kata runs as usual (the checks marked ``cuda`` skip, or use a real GPU).  A newer
torch may work: ``KATA_SIM_UNTESTED=1`` tries it.

Opting in, and what it changes for the process: nothing happens on import.
:func:`install` renames the PrivateUse1 backend (once per process; it fails with
a clear error if something else already took it) and registers the
``torch.simgpu`` device module, torch's Python hooks and device guard (autograd
asks them), and the kernels.  This cannot be undone in the process.  It must come
before the process's first backward pass (PyTorch's autograd engine can't take a
new device after that; install() then raises RuntimeError).  From then on:

- ``torch.accelerator.current_accelerator()`` returns ``simgpu`` (PyTorch prefers
  a registered PrivateUse1 backend to CUDA), and ``torch.accelerator.is_available()``
  and ``torch.simgpu.is_available()`` are True only inside :func:`active`, so code
  that picks "the accelerator if available" does not pick the simulator unless
  asked to.  ``torch.cuda.is_available()``, ``torch.backends.mps.is_available()``,
  CPU tensors and ``.cuda()`` tensors are unchanged.
- On a machine with a real GPU this does change what goes through
  ``torch.accelerator``: ``is_available()`` is False outside :func:`active`,
  ``DataLoader(pin_memory=True)`` stops pinning (with PyTorch's warning), and
  ``t.pin_memory()`` without a device raises.  Use the simulator in processes that
  don't rely on ``torch.accelerator`` or pinned memory for the real GPU.
- Pinned memory is not simulated: inside :func:`active`, ``DataLoader(...,
  pin_memory=True)`` raises NotImplementedError; outside it, it pins nothing.

Differences from a real GPU (CUDA):

- It computes synchronously on the CPU with the CPU's kernels and the CPU's random
  generator (``torch.manual_seed`` seeds it; the same seed gives the same numbers
  on simgpu as on the CPU), in the CPU's precision; there are no streams, and
  ``non_blocking=True`` copies are plain copies; ``torch.simgpu.synchronize()``
  does nothing.  Only one device, ``simgpu:0``.  ``t.data_ptr()`` is 0.
- ``F.dropout`` in training becomes ``native_dropout``, as on CUDA, but is computed
  as the CPU computes ``F.dropout``; ``torch.optim`` takes its single-tensor code
  path, as on the CPU, not CUDA's ``foreach`` one (it takes that only for plain
  ``Tensor``/``Parameter`` classes).  So a simgpu run gives a CPU run's numbers.
- The device-mixing message is always the TensorIterator one, with the simgpu
  device first.  Real CUDA words some ops differently: a convolution fed a CPU
  input says "Input type (torch.FloatTensor) and weight type
  (torch.cuda.FloatTensor) should be the same ...", ``addmm`` names the argument
  ("... (when checking argument for argument mat1 in method wrapper_CUDA_addmm)"),
  and an elementwise op names the devices in operand order.  All are RuntimeErrors.
- A model moved to simgpu has parameters of class :class:`SimTensor` (with
  ``isinstance(p, nn.Parameter)`` True), not of class ``Parameter``; moving it
  back with ``model.to("cpu")`` makes new ``Parameter`` objects (CUDA keeps the
  same ones), so make the optimizer after the last move.
- ``torch.save``/pickle of device tensors works, but ``torch.load`` needs
  ``weights_only=False`` (the loader must import :mod:`kata.sim`) and loads them
  back on simgpu whatever ``map_location`` says: save ``.cpu()`` copies instead.  Not simulated:
  pinned memory, streams and events, sharing tensors between processes,
  ``torch.compile``, sparse and quantized tensors, more than one device.
"""

from ._backend import NAME, is_sim, support
from ._device import SimTensor
from ._install import active, install
from ._syncs import Syncs, count_syncs

__all__ = ["NAME", "SimTensor", "Syncs", "active", "count_syncs", "install", "is_sim", "support"]
