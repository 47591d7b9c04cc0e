"""An independent implementation of exercise 3, written from CONTRACT.md alone."""

from torch import nn


def build_model():
    layers = []
    channels = [3, 32, 64, 128, 256]
    for i in range(4):
        layers += [nn.Conv2d(channels[i], channels[i + 1], 3, padding=1), nn.ReLU()]
        layers.append(nn.MaxPool2d(2) if i < 3 else nn.AvgPool2d(8))
        if i < 2:
            layers.append(nn.Dropout(0.5))
    layers += [nn.Flatten(), nn.Linear(256, 1), nn.Sigmoid()]
    return nn.Sequential(*layers)
