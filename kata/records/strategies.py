"""Hypothesis strategies shared by the checks (one module, as in minitorch)."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from PIL import Image

from kata.records.history import History
from kata.records.wire import known_tuple

__all__ = ["CASE_SECONDS", "GRAD_KINDS", "HISTORY_DEVICE", "HISTORY_ENTRY_KINDS", "Pair", "accuracy_values",
           "attribute_vectors", "batch_sizes", "examples", "histories", "history_entry", "history_entry_kinds",
           "image_sizes", "loss_values", "make_history", "nested", "nested_tensors", "pil_images", "plain_leaves",
           "tensors"]

# --- How many examples a property check draws ---------------------------------
#
# Every property check gets the profile's number of examples (conftest.py: 20 in the kata's profile,
# 200 in HYPOTHESIS_PROFILE=explore) while one of its cases costs at most CASE_SECONDS on the reference
# (measured on 2 cores); a costlier check gets fewer, so that it spends about what the cheap ones spend,
# and never fewer than 3 besides its explicit examples. So the cheap checks keep their breadth and the
# costly ones (a redraw of the learner's figure per epoch) do not make the wait.

CASE_SECONDS = 0.02


def examples(case_seconds: float) -> int:
    """``max_examples`` for a property check one of whose cases costs about ``case_seconds``."""
    n = settings.default.max_examples
    return max(3, min(n, round(n * CASE_SECONDS / case_seconds)))


# The book's pipeline needs images at least 178 pixels on each side
# (RandomCrop/CenterCrop to 178x178); CelebA's aligned faces are 178x218.
image_sizes = st.tuples(st.integers(178, 260), st.integers(178, 260))


@st.composite
def pil_images(draw, sizes=image_sizes) -> Image.Image:
    """RGB images of random size and content (noise on a random colour)."""
    width, height = draw(sizes)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=3)
    noise = rng.integers(-40, 41, size=(height, width, 3))
    pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels, "RGB")


def attribute_vectors(n_attributes: int = 40):
    """CelebA attribute vectors as torchvision gives them: 0/1 int64 tensors."""
    import torch

    return st.lists(st.integers(0, 1), min_size=n_attributes, max_size=n_attributes).map(
        lambda bits: torch.tensor(bits, dtype=torch.int64))


batch_sizes = st.integers(min_value=1, max_value=6)


# --- Histories (exercise 5, plotting) -------------------------------------
#
# A history is what `train` returns and passes to `on_epoch`: four lists
# (loss_train, loss_valid, acc_train, acc_valid) with one entry per epoch. The
# plotting exercise must draw any of them: Python floats (`loss.item()`), NumPy
# scalars, or 0-d tensors on any device, with or without autograd. Values are
# float32-exact, so every kind of entry holds exactly the value drawn, and a plot
# can be compared with it exactly.
#
# The kinds of tensor entry, each its own case:
# - "tensor": a 0-d float32 tensor without grad, the seed's entry
#   (`accuracy_tmp += is_correct.sum()`, divided by the dataset size). On the
#   CPU matplotlib plots it; on an accelerator it is the seed's crash.
# - "tensor.float64": the same in float64.
# - "tensor with requires_grad" / "tensor with grad_fn": a loss kept as a tensor
#   (a leaf that requires grad, or a result with a grad_fn). NumPy refuses these
#   on any device ("Can't call numpy() on Tensor that requires grad").
#
# Tensors go to HISTORY_DEVICE (the CPU) unless a `device` is given: pass the
# accelerator to make the seed's crash happen.

HISTORY_DEVICE = "cpu"


def _tensor_entry(value, device, dtype_name="float32", grad=False, leaf=True):
    import torch

    t = torch.tensor(value, dtype=getattr(torch, dtype_name), device=device or HISTORY_DEVICE, requires_grad=grad)
    return t if leaf else t * 1  # * 1: a result with a grad_fn, like a loss tensor kept whole


# kind -> how an entry of that kind is made from a float (and a device for tensors).
HISTORY_ENTRY_KINDS = {
    "float": lambda v, device=None: float(v),
    "numpy.float64": lambda v, device=None: np.float64(v),
    "numpy.float32": lambda v, device=None: np.float32(v),
    "tensor": lambda v, device=None: _tensor_entry(v, device),
    "tensor.float64": lambda v, device=None: _tensor_entry(v, device, "float64"),
    "tensor with requires_grad": lambda v, device=None: _tensor_entry(v, device, grad=True),
    "tensor with grad_fn": lambda v, device=None: _tensor_entry(v, device, grad=True, leaf=False),
}
GRAD_KINDS = ("tensor with requires_grad", "tensor with grad_fn")


def history_entry(value: float, kind: str, device=None):
    """`value` as a history entry of `kind` (a key of HISTORY_ENTRY_KINDS)."""
    return HISTORY_ENTRY_KINDS[kind](value, device)


def make_history(values, kinds="float", device=None, named=False):
    """A history from four lists of floats. `kinds` is one kind for every entry,
    four kinds (one per list), or four lists of kinds (one per entry)."""
    if isinstance(kinds, str):
        kinds = [kinds] * 4
    lists = []
    for vals, kind in zip(values, kinds):
        per_entry = [kind] * len(vals) if isinstance(kind, str) else kind
        lists.append([history_entry(v, k, device) for v, k in zip(vals, per_entry)])
    return History(*lists) if named else tuple(lists)


# Values as training gives them: a loss >= 0 (BCELoss stops at 100), an accuracy in [0, 1].
loss_values = st.floats(min_value=0, max_value=100, width=32)
accuracy_values = st.floats(min_value=0, max_value=1, width=32)
history_entry_kinds = st.sampled_from(sorted(HISTORY_ENTRY_KINDS))


@st.composite
def histories(draw, min_epochs=1, max_epochs=30, device=None):
    """`(values, history)`: four lists of floats, and the same numbers as a history
    (a plain or named tuple) whose lists hold one kind of entry each, or a mix."""
    n = draw(st.integers(min_epochs, max_epochs))
    values = tuple(draw(st.lists(v, min_size=n, max_size=n))
                   for v in (loss_values, loss_values, accuracy_values, accuracy_values))
    kinds = []
    for _ in range(4):
        kind = draw(st.sampled_from(["mixed", *sorted(HISTORY_ENTRY_KINDS)]))
        kinds.append(draw(st.lists(history_entry_kinds, min_size=n, max_size=n)) if kind == "mixed" else kind)
    return values, make_history(values, kinds, device, named=draw(st.booleans()))


# --- Nested containers of tensors (exercise 1, devices) --------------------
#
# What `to_device` and `to_python` walk through: lists, tuples, named tuples and
# dicts (plain ones, OrderedDicts and defaultdicts: the contract's "dict" is any
# of them), nested, holding tensors of random shapes and dtypes among plain values.

Pair = known_tuple(namedtuple("Pair", ["first", "second"]))

TENSOR_DTYPES = ("float32", "float64", "int64", "int32", "bool")


@st.composite
def tensors(draw, max_dims=3, requires_grad=None):
    """A CPU tensor of random shape (0-d included) and dtype; float ones may require grad."""
    import torch

    dtype = getattr(torch, draw(st.sampled_from(TENSOR_DTYPES)))
    shape = tuple(draw(st.lists(st.integers(1, 3), max_size=max_dims)))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=g, dtype=dtype)
        grad = draw(st.booleans()) if requires_grad is None else requires_grad
        return t.requires_grad_(grad)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-100, 100, shape, generator=g, dtype=dtype)


plain_leaves = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000),
                         st.floats(allow_nan=False, width=32), st.text(max_size=5))


def _dicts(children):
    return st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), children, max_size=3)


def nested(leaves):
    """Lists, tuples, named tuples and dicts (plain, ordered, default) of `leaves`, nested a few levels."""
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.lists(children, max_size=3).map(tuple),
            st.builds(Pair, children, children),
            _dicts(children),
            _dicts(children).map(OrderedDict),
            _dicts(children).map(lambda d: defaultdict(list, d)),
        ),
        max_leaves=8,
    )


def nested_tensors(requires_grad=None):
    """A nest of containers holding tensors and plain values."""
    return nested(st.one_of(tensors(requires_grad=requires_grad), plain_leaves))
