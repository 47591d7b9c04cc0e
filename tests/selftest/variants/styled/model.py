"""The book's CNN, with an OrderedDict."""

from collections import OrderedDict

from torch import nn


def _block(i, c_in, c_out, pool, dropout):
    layers = [(f"conv{i}", nn.Conv2d(c_in, c_out, kernel_size=3, padding=1)), (f"relu{i}", nn.ReLU()),
              (f"pool{i}", pool)]
    if dropout:
        layers.append((f"dropout{i}", nn.Dropout(p=0.5)))
    return layers


def build_model() -> nn.Sequential:
    layers = []
    layers += _block(1, 3, 32, nn.MaxPool2d(kernel_size=2), True)
    layers += _block(2, 32, 64, nn.MaxPool2d(kernel_size=2), True)
    layers += _block(3, 64, 128, nn.MaxPool2d(kernel_size=2), False)
    layers += _block(4, 128, 256, nn.AvgPool2d(kernel_size=8), False)
    layers += [("flatten", nn.Flatten()), ("fc", nn.Linear(256, 1)), ("sigmoid", nn.Sigmoid())]
    return nn.Sequential(OrderedDict(layers))
