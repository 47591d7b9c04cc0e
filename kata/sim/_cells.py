"""The fused LSTM and GRU cells: kernels CUDA has and the CPU lacks, computed here as CUDA computes them.

On a device that is not the CPU, PyTorch's ``nn.LSTM`` and ``nn.GRU`` (aten/src/ATen/native/RNN.cpp) run each
step as one fused cell, ``_thnn_fused_lstm_cell`` or ``_thnn_fused_gru_cell``, and autograd's backward as its
fused backward (aten/src/ATen/native/cuda/RNN.cu). The CPU has neither, so the simulated device computes them
here, in CPU ops, with CUDA's arithmetic and the workspace each forward leaves for its backward: an LSTM's four
activated gates; a GRU's three, its hidden state and its hidden ``n`` gate. ``tests/selftest/test_simulator.py``
holds them to the CPU's own (unfused) LSTM and GRU: the same outputs and gradients.
"""

from __future__ import annotations

import torch

__all__ = ["KERNELS"]

_aten = torch.ops.aten


def _lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def _lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = cy.tanh()
    grad_hy = torch.zeros_like(cy) if grad_hy is None else grad_hy
    grad_c = grad_hy * o * (1 - tanh_cy * tanh_cy) + (0 if grad_cy is None else grad_cy)
    grad_gates = torch.cat([grad_c * g * i * (1 - i), grad_c * cx * f * (1 - f), grad_c * i * (1 - g * g),
                            grad_hy * tanh_cy * o * (1 - o)], 1)
    return grad_gates, grad_c * f, grad_gates.sum(0) if has_bias else None


def _gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    if input_bias is not None:
        input_gates, hidden_gates = input_gates + input_bias, hidden_gates + hidden_bias
    ir, ii, in_ = input_gates.chunk(3, 1)
    hr, hi, hn = hidden_gates.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (hx - n), torch.cat([r, z, n, hx, hn], 1)


def _gru_cell_backward(grad_hy, workspace, has_bias):
    r, z, n, hx, hn = workspace.chunk(5, 1)
    grad_z = grad_hy * (hx - n) * (1 - z) * z
    grad_in = grad_hy * (1 - z) * (1 - n * n)
    grad_r = grad_in * hn * (1 - r) * r
    grad_input_gates = torch.cat([grad_r, grad_z, grad_in], 1)
    grad_hidden_gates = torch.cat([grad_r, grad_z, grad_in * r], 1)
    biases = (grad_input_gates.sum(0), grad_hidden_gates.sum(0)) if has_bias else (None, None)
    return grad_input_gates, grad_hidden_gates, grad_hy * z, *biases


KERNELS = {
    _aten._thnn_fused_lstm_cell.default: _lstm_cell,
    _aten._thnn_fused_lstm_cell_backward_impl.default: _lstm_cell_backward,
    _aten._thnn_fused_gru_cell.default: _gru_cell,
    _aten._thnn_fused_gru_cell_backward.default: _gru_cell_backward,
}
