"""The book's model cells (Raschka et al., chapter 14), run as the book runs them.

The book builds the convolutions, checks the output shape with a forward pass
of `torch.ones((4, 3, 64, 64))` (in train mode: the dropout layers draw random
numbers), adds the pooling and Flatten, checks again, adds the classifier,
checks once more. The random numbers drawn by those checks change the Linear
layer's initial weights, not the model.
"""

import torch
import torch.nn as nn


def build_model():
    model = nn.Sequential()
    model.add_module('conv1', nn.Conv2d(in_channels=3, out_channels=32, kernel_size=3, padding=1))
    model.add_module('relu1', nn.ReLU())
    model.add_module('pool1', nn.MaxPool2d(kernel_size=2))
    model.add_module('dropout1', nn.Dropout(p=0.5))

    model.add_module('conv2', nn.Conv2d(in_channels=32, out_channels=64, kernel_size=3, padding=1))
    model.add_module('relu2', nn.ReLU())
    model.add_module('pool2', nn.MaxPool2d(kernel_size=2))
    model.add_module('dropout2', nn.Dropout(p=0.5))

    model.add_module('conv3', nn.Conv2d(in_channels=64, out_channels=128, kernel_size=3, padding=1))
    model.add_module('relu3', nn.ReLU())
    model.add_module('pool3', nn.MaxPool2d(kernel_size=2))

    model.add_module('conv4', nn.Conv2d(in_channels=128, out_channels=256, kernel_size=3, padding=1))
    model.add_module('relu4', nn.ReLU())

    x = torch.ones((4, 3, 64, 64))
    assert model(x).shape == (4, 256, 8, 8)

    model.add_module('pool4', nn.AvgPool2d(kernel_size=8))
    model.add_module('flatten', nn.Flatten())

    x = torch.ones((4, 3, 64, 64))
    assert model(x).shape == (4, 256)

    model.add_module('fc', nn.Linear(256, 1))
    model.add_module('sigmoid', nn.Sigmoid())

    x = torch.ones((4, 3, 64, 64))
    assert model(x).shape == (4, 1)
    return model
