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
                                       # .total, .by_kind {kind: n}, .events [(kind, "file:line")], .reset(),
                                       # .copies ["file:line"]: non_blocking copies to the host (no syncs)
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

What behaves as on a real GPU (CUDA) -- the conformance table, ``kata/conformance/table.toml``,
holds the simulator to each of these, with where CUDA's behaviour is written down:

- ``t.device`` is ``simgpu:0``; ``x.to(dev)`` copies to it; ``t.to(dev)`` of a tensor
  already there returns ``t`` itself; ``.float()`` and other dtype casts keep the
  device; ``t.cpu()`` / ``t.to("cpu")`` returns a new CPU tensor (a copy);
  ``torch.zeros(..., device=dev)``, ``torch.tensor(..., device=dev)``,
  ``torch.arange(..., device=dev)``, ``torch.randn(..., device=dev)`` and the
  ``*_like`` factories make device tensors; ``torch.tensor([...])`` with no device
  is a CPU tensor.  ``t.simgpu()``, ``t.is_simgpu`` and ``model.simgpu()`` work like ``.cuda()``.
  ``t.data_ptr()`` is the address of the memory behind it (distinct per storage).
- ``Module.to(dev)`` and ``Module.to("cpu")`` move the parameters in place: the same
  ``Parameter`` objects, so an optimizer made before the moves keeps training the
  model (on the device they are of class :class:`SimTensor`, and
  ``isinstance(p, nn.Parameter)`` stays True); ``x.data = cpu_tensor`` makes x a CPU
  tensor; autograd, ``BCELoss``, ``torch.optim.Adam``, ``torch.no_grad()``,
  ``state_dict()``, ``load_state_dict()`` and ``copy.deepcopy(model)`` work.
- Mixing devices raises ``RuntimeError: Expected all tensors to be on the same
  device, but found at least two devices, simgpu:0 and cpu!``, or the op's own
  words where CUDA has them (a convolution's "Input type (torch.FloatTensor) and
  weight type (torch.simgpu.FloatTensor) should be the same ..." for a batch MKLDNN
  takes, the dispatcher's "... but got weight is on simgpu:0, different from other
  tensors on cpu (when checking argument in method wrapper_CUDA___slow_conv2d_forward)"
  for a smaller one and for ``torch.equal``).  A 0-d CPU tensor is a
  scalar as an *input* (``sim_t + torch.tensor(2.)`` works), never as the *output*
  (``s += sim_t`` with ``s = torch.tensor(0.)`` raises, as on CUDA); copies
  (``copy_``, ``.to``) and CPU index tensors may cross devices.
- ``t.numpy()``, ``np.asarray(t)``, ``np.array([t0, t1])`` and matplotlib's
  ``ax.plot([t0, t1])`` raise ``TypeError: can't convert simgpu:0 device type
  tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.``
  (PyTorch's own check); ``float(t)``, ``int(t)``, ``bool(t)``, ``t.item()``,
  ``t.tolist()`` and ``print(t)`` work and return host values, as on CUDA.
- ``torch.save`` writes device tensors as CUDA tensors (location ``cuda:0``):
  ``torch.load(f, map_location="cpu")`` works with the default ``weights_only=True``;
  a process with no accelerator (no CUDA, the simulator not installed) meets
  PyTorch's own "Attempting to deserialize object on a CUDA device but
  torch.cuda.is_available() is False ..."; with the simulator installed,
  ``torch.load(f)`` and ``map_location=dev`` load onto simgpu (:mod:`kata.sim._saving`).
- ``torch.autocast("simgpu")`` applies CUDA's autocast rules (:mod:`kata.sim._autocast`):
  ``linear``, convolutions and matrix products in float16 (or the region's dtype),
  softmax, sums and the losses in float32, ``addcmul`` and its kind in the widest
  input type, ``binary_cross_entropy`` (``nn.BCELoss``) refused with CUDA's words;
  CPU tensors inside the region are left alone, as CUDA leaves them.
  ``torch.amp.GradScaler("simgpu")`` works, its ``step`` one sync (``"item"``).
- ``nn.LSTM`` and ``nn.GRU`` run the fused cells a device runs (CUDA's kernels, which
  the CPU lacks, computed in :mod:`kata.sim._cells`): the CPU's outputs and gradients.
  A packed sequence's batch sizes stay on the CPU, and ``F.ctc_loss`` takes its lengths
  there, as on CUDA.

Synchronisations counted, by kind (in a :func:`count_syncs` block), as CUDA's
``torch.cuda.set_sync_debug_mode`` reports them:
``"item"`` (``t.item()``, and ``.item()`` inside library code such as
``torch.allclose``), ``"float"`` / ``"int"`` / ``"bool"`` (``float(t)``,
``int(t)``/``operator.index(t)``, ``bool(t)`` and ``if t:``), ``"cpu"``
(``t.cpu()``, ``t.to("cpu")``, ``cpu_t.copy_(t)``, ``numpy(force=True)``),
``"to_device"`` (a blocking copy from the host: ``x.to(dev)``,
``torch.tensor(..., device=dev)``, ``dev_t.copy_(x)``, indexing with CPU integer
indices; CUDA synchronizes the stream after each), ``"tolist"``, ``"numpy"`` (every
attempt, failing or not: ``t.numpy()``, ``np.asarray(t)``), ``"repr"``
(``repr``/``str``/``print``/``format`` of a device tensor), and ops whose result
size or value the host must read: ``"equal"`` (``torch.equal``), ``"nonzero"``,
``"masked_select"``, ``"unique"``, ``"repeat_interleave"``, ``"index"`` (indexing
with a boolean mask on the device; a CPU mask, and ``t[mask] = 1.0``, are none;
``torch.equal`` of two sizes, or of a view with itself, is none), and
``"synchronize"`` (``torch.simgpu.synchronize()``, ``torch.get_device_module(dev)
.synchronize()``: CUDA's debug mode never reports ``torch.cuda.synchronize()``, so
:func:`count_cuda_syncs` counts that call itself).
One Python-level call counts once (CUDA may count a ``print`` several times).
Copies with ``non_blocking=True`` are not syncs, either way; one to the host
arrives at the next sync (until then its destination reads NaN, or 0), as a CUDA
copy lands when the stream gets there.

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
  ``t.pin_memory()`` without a device raises; ``torch.load`` of a CUDA checkpoint
  still loads onto CUDA.  Use the simulator in processes that don't rely on
  ``torch.accelerator`` or pinned memory for the real GPU (``kata doctor`` runs
  each device in a process of its own).
- Pinned memory is not simulated: inside :func:`active`, ``t.pin_memory()`` and
  ``DataLoader(..., pin_memory=True)`` raise PyTorch's own NotImplementedError (no
  page-locked memory without a CUDA driver); outside it, the DataLoader pins nothing.
  ``t.pin_memory()`` of a device tensor raises CUDA's "cannot pin ... only dense CPU
  tensors can be pinned".

Differences from a real GPU (CUDA):

- It computes synchronously on the CPU with the CPU's kernels and the CPU's random
  generator (``torch.manual_seed`` and ``torch.simgpu.manual_seed`` seed it; the same
  seed gives the same numbers on simgpu as on the CPU), in the CPU's precision; there
  are no streams or events (``torch.simgpu.synchronize()`` lands the copies in flight, a sync;
  ``torch.accelerator.synchronize()`` refuses), and only one device, ``simgpu:0``.  The
  destination of a ``non_blocking`` copy to the host is not pinned memory.
  ``t.untyped_storage()`` of a device tensor has no data pointer.
- ``F.dropout`` in training becomes ``native_dropout``, as on CUDA, but is computed
  as the CPU computes ``F.dropout``; ``torch.optim`` takes its single-tensor code
  path, as on the CPU, not CUDA's ``foreach`` one (it takes that only for plain
  ``Tensor``/``Parameter`` classes).  So a simgpu run gives a CPU run's numbers.
- The device-mixing message is the TensorIterator one (with the simgpu device
  first) except for the ops above; real CUDA adds, for some ops, the argument it
  checked ("... (when checking argument for argument mat1 in method
  wrapper_CUDA_addmm)").  All are RuntimeErrors.
- A model moved to simgpu has parameters of class :class:`SimTensor` (with
  ``isinstance(p, nn.Parameter)`` True), not of class ``Parameter``.  A CPU tensor
  object can't become a device tensor: ``cpu_x.data = dev_y`` raises PyTorch's
  "incompatible tensor type" (CUDA allows it), and ``Module.to(dev)`` of a CPU model
  *inside* ``torch.inference_mode()`` makes new Parameter objects (outside it, and
  ``to("cpu")`` anywhere, keeps them).
- Not simulated: streams and events, sharing tensors between processes,
  ``torch.compile``, sparse and quantized tensors, more than one device.
"""

from ._backend import NAME, is_sim, support
from ._device import SimTensor
from ._install import active, install
from ._saving import as_device_storage
from ._syncs import Syncs, count_cuda_syncs, count_syncs, get_sync_debug_mode, set_sync_debug_mode

__all__ = ["NAME", "SimTensor", "Syncs", "active", "as_device_storage", "count_cuda_syncs", "count_syncs",
           "get_sync_debug_mode", "install", "is_sim", "set_sync_debug_mode", "support"]
