"""Exercise 3 · model: the book's CNN, layer for layer.

Run `pytest exercises/model.py` to check just this file.
"""

import torch.nn as nn


def build_model() -> nn.Sequential:
    """Build the book's smile classifier as one `nn.Sequential`, in this order:

        Conv2d(3 -> 32, kernel_size=3, padding=1), ReLU, MaxPool2d(2), Dropout(0.5)
        Conv2d(32 -> 64, kernel_size=3, padding=1), ReLU, MaxPool2d(2), Dropout(0.5)
        Conv2d(64 -> 128, kernel_size=3, padding=1), ReLU, MaxPool2d(2)
        Conv2d(128 -> 256, kernel_size=3, padding=1), ReLU, AvgPool2d(8)
        Flatten, Linear(256 -> 1), Sigmoid

    A 64x64 image shrinks to 32, 16 and 8 pixels through the three max-pools;
    AvgPool2d(8) averages the last 8x8 down to one value per channel, so
    Linear sees 256 numbers. The Sigmoid turns the score into a probability of
    "smiling" in (0, 1). That makes 388,673 parameters.

    Build the layers in that order (with `torch.manual_seed(1)`, the checks
    expect the book's initial weights), and return a NEW model on each call.

    Concept: a model is built on the CPU; whoever trains it decides the
    device, with `model.to(device)`, which moves it in place. So don't call
    `.to()` or `.cuda()` here.
    Hint: `nn.Sequential()` then `model.add_module('conv1', nn.Conv2d(...))`,
    as the book does, or pass the layers to `nn.Sequential(...)`.
    """
    raise NotImplementedError("build the book's CNN (see the docstring) and return it")
