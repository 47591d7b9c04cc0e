"""A third independent implementation, in today's idioms: model."""

import torch.nn as nn


def build_model():
    layers = []
    for c_in, c_out, p in ((3, 32, 0.5), (32, 64, 0.5), (64, 128, None), (128, 256, None)):
        layers += [nn.Conv2d(c_in, c_out, kernel_size=3, padding=1), nn.ReLU()]
        if c_out == 256:
            break
        layers.append(nn.MaxPool2d(kernel_size=2))
        if p:
            layers.append(nn.Dropout(p=p))
    layers += [nn.AvgPool2d(kernel_size=8), nn.Flatten(), nn.Linear(256, 1), nn.Sigmoid()]
    return nn.Sequential(*layers)
