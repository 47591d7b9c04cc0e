"""``torch.autocast`` on the device, with CUDA's rules: which ops run in float16 (or the region's dtype), which
in float32, which in the widest of their inputs' types, and which refuse to run at all.

CUDA's autocast is a set of kernels at the dispatcher's ``Autocast`` key (aten/src/ATen/autocast_mode.cpp and .h,
the "Autocast Op Reference" of PyTorch's AMP documentation). The device's are the same rules at its
``AutocastPrivateUse1`` key, one Python kernel per op of :data:`POLICIES` that this torch's CUDA autocast takes,
each doing what CUDA's wrapper of that policy does: cast each eligible argument (a floating tensor on the device,
not float64; CPU tensors are left as they are, as CUDA leaves them), then run the op with autocast off. Every
other op passes through unchanged.
``tests/selftest/test_simulator.py`` holds :data:`POLICIES` to the installed torch's own CUDA kernels, which it
runs on fake CUDA tensors: the same ops, and the same dtypes out.

Not copied: CUDA's cache of float16 copies of the weights within one region (the same values, cast again).
"""

from __future__ import annotations

import torch

from ._backend import NAME
from ._compat import argument_at, autocast_off, cuda_autocasts

__all__ = ["BCE_BANNED", "POLICIES", "register", "taken"]

# What torch.autocast casts to on each policy, by the op's overload ("linear" is aten::linear.default).
POLICIES: dict[str, tuple[str, ...]] = {
    # the region's dtype (float16 unless autocast(dtype=...) says otherwise)
    "lower_precision_fp": (
        "_convolution", "_convolution.deprecated", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
        "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu", "addmm", "addmv", "addr",
        "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul",
        "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell",
        "rnn_tanh_cell", "rnn_relu_cell", "_scaled_dot_product_flash_attention", "scaled_dot_product_attention"),
    # float32
    "fp32": (
        "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
        "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus", "layer_norm",
        "native_layer_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim",
        "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
        "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
        "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
        "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
        "upsample_nearest1d", "_upsample_nearest_exact1d", "upsample_nearest2d", "_upsample_nearest_exact2d",
        "upsample_nearest3d", "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
        "_upsample_bilinear2d_aa", "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa",
        "rms_norm", "linalg_matrix_sqrth"),
    # float32 by their own dtype argument, where it is not given (softmax(x, dim) is softmax(x, dim, float32))
    "fp32_set_opt_dtype": (
        "prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum", "linalg_vector_norm",
        "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum", "sum.dim_IntList"),
    # float32 by the overload that takes a dtype (norm(x, p) is norm(x, p, dtype=float32))
    "fp32_append_dtype": ("norm.Scalar", "norm.ScalarOpt_dim"),
    # the widest floating type among the arguments on the device
    "promote": (
        "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
        "tensordot", "scatter_add"),
    # refused (CUDA's binary_cross_entropy_banned)
    "banned": ("binary_cross_entropy",),
}
BCE_BANNED = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")
_APPENDED = {"norm.Scalar": "norm.ScalarOpt_dtype", "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype"}


def _eligible(x) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == NAME and x.is_floating_point() \
        and x.dtype != torch.float64


def _cast(x, dtype):
    if isinstance(x, torch.Tensor):
        return x.to(dtype) if _eligible(x) and x.dtype != dtype else x
    if isinstance(x, (list, tuple)) and any(isinstance(item, torch.Tensor) for item in x):
        return type(x)(_cast(item, dtype) for item in x)
    return x


def _tensors(args):
    for x in args:
        if isinstance(x, torch.Tensor):
            yield x
        elif isinstance(x, (list, tuple)):
            yield from (item for item in x if isinstance(item, torch.Tensor))


def _widest(args, lower: torch.dtype) -> torch.dtype:
    """CUDA's promote_type: float32 where any eligible argument is float32, else the region's dtype."""
    current = lower
    for x in _tensors(args):
        if not _eligible(x):
            continue
        if torch.float32 in (current, x.dtype):
            current = torch.float32
        elif not (current == lower and x.dtype == lower):
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def _op(name: str):
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


def _kernel(name: str, policy: str):
    op = _op(_APPENDED.get(name, name))
    dtype_at = argument_at(op, "dtype")

    def kernel(*args, **kwargs):
        if policy == "banned":
            raise RuntimeError(BCE_BANNED)
        lower = torch.get_autocast_dtype(NAME)
        with autocast_off():
            if policy in ("lower_precision_fp", "fp32", "promote"):   # each eligible argument cast to one dtype
                to = {"lower_precision_fp": lower, "fp32": torch.float32}.get(policy) or _widest(
                    [*args, *kwargs.values()], lower)
                return op(*(_cast(x, to) for x in args), **{k: _cast(v, to) for k, v in kwargs.items()})
            first = _eligible(args[0]) if args else False
            if policy == "fp32_append_dtype":
                return op(*args, **kwargs, dtype=torch.float32 if first else args[0].dtype)
            # fp32_set_opt_dtype: the dtype argument, where the caller left it unset and the first is eligible
            if first:
                if dtype_at is not None and dtype_at < len(args):
                    if args[dtype_at] is None:
                        args = (*args[:dtype_at], torch.float32, *args[dtype_at + 1:])
                elif kwargs.get("dtype") is None:
                    kwargs = {**kwargs, "dtype": torch.float32}
            return op(*args, **kwargs)
    return kernel


def register(library, everything) -> None:
    """The device's autocast kernels into ``library`` (aten's IMPL), and every other op passed through at that key
    (``everything``: a library of the global namespace, for the fallthrough)."""
    everything.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    for policy, names in POLICIES.items():
        for name in names:
            if taken(name):
                library.impl(name, _kernel(name, policy), "AutocastPrivateUse1")


def taken(name: str) -> bool:
    """Whether the op ``name`` of :data:`POLICIES` is autocast here: where this torch has it, and its CUDA autocast
    takes it (a torch before or after this one may lack the op, or leave it alone)."""
    try:
        _op(name)
    except AttributeError:
        return False
    return cuda_autocasts(name)
