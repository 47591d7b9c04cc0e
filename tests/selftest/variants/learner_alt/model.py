"""More of a learner's CNN (issue #19): a loop over the channel pairs, add_module with f-string names,
padding=(1, 1), nn.Flatten() and AvgPool2d(8) positional."""

from torch import nn


def build_model():
    model = nn.Sequential()
    channels = [3, 32, 64, 128, 256]
    for i, (c_in, c_out) in enumerate(zip(channels, channels[1:]), start=1):
        model.add_module(f"conv{i}", nn.Conv2d(c_in, c_out, 3, padding=(1, 1)))
        model.add_module(f"relu{i}", nn.ReLU())
        if i < 4:
            model.add_module(f"pool{i}", nn.MaxPool2d(2))
        if i < 3:
            model.add_module(f"dropout{i}", nn.Dropout(0.5))
    model.add_module("pool4", nn.AvgPool2d(8))
    model.add_module("flatten", nn.Flatten())
    model.add_module("fc", nn.Linear(256, 1))
    model.add_module("sigmoid", nn.Sigmoid())
    return model
