"""Exercise 3 · model: the book's CNN, layer for layer.

Run `pytest exercises/model.py` to check just this file, and `kata hint model`
when you are stuck.
"""

import torch.nn as nn


def build_model() -> nn.Sequential:
    """Build and return the book's smile classifier, one `nn.Sequential`.

    Specification, the book's layers in this order (every kernel 3x3 with
    padding 1, so a convolution keeps the size of its maps):

        Conv2d 3 -> 32 channels,    ReLU, MaxPool2d of 2, Dropout of 0.5
        Conv2d 32 -> 64 channels,   ReLU, MaxPool2d of 2, Dropout of 0.5
        Conv2d 64 -> 128 channels,  ReLU, MaxPool2d of 2
        Conv2d 128 -> 256 channels, ReLU, AvgPool2d of 8
        Flatten, Linear 256 -> 1, Sigmoid

    - Every other setting is PyTorch's default (stride, bias, ...).
    - A 64x64 image shrinks to 32, 16 and 8 pixels through the three
      max-pools; the average pool takes the last 8x8 maps to one value per
      channel, so the Linear layer sees 256 numbers, and the Sigmoid turns its
      score into a probability of "smiling" in (0, 1). The output of a batch
      of N images has shape (N, 1). That makes 388,673 parameters.
    - Create the layers in that order and draw no other random numbers in
      between: after `torch.manual_seed(1)` the initial weights must be the
      book's.
    - Each call builds a NEW model (no layer shared with an earlier one).
    - The model is not placed anywhere: no device call on it here; it is
      built on the CPU and whoever trains it decides where it goes.

    Concept: a model is a stack of layers holding parameters; where those
    parameters live is the caller's decision, not the model's.
    """
    raise NotImplementedError(
        "`build_model` is not written yet: see its docstring, and `kata hint model`")
