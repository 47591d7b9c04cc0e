"""A learner's CNN, from the stub's specification alone (issue #19): nn.Sequential of an OrderedDict,
padding='same' (for a 3x3 kernel, the book's padding=1), tuple kernel sizes, positional arguments."""

from collections import OrderedDict

import torch.nn as nn


def _block(i: int, c_in: int, c_out: int):
    return [(f"conv{i}", nn.Conv2d(c_in, c_out, kernel_size=(3, 3), padding="same")), (f"relu{i}", nn.ReLU())]


def build_model() -> nn.Sequential:
    layers = []
    layers += _block(1, 3, 32) + [("pool1", nn.MaxPool2d(2, 2)), ("drop1", nn.Dropout(0.5))]
    layers += _block(2, 32, 64) + [("pool2", nn.MaxPool2d(2)), ("drop2", nn.Dropout(p=0.5))]
    layers += _block(3, 64, 128) + [("pool3", nn.MaxPool2d(kernel_size=(2, 2)))]
    layers += _block(4, 128, 256) + [("pool4", nn.AvgPool2d(kernel_size=8, stride=8))]
    layers += [("flatten", nn.Flatten(1)), ("fc", nn.Linear(in_features=256, out_features=1)),
               ("sigmoid", nn.Sigmoid())]
    return nn.Sequential(OrderedDict(layers))
