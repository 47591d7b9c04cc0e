"""The training loop, with a typing.NamedTuple and math.fsum."""

import math
from typing import NamedTuple

import torch
from torch import nn


class History(NamedTuple):
    loss_hist_train: list
    loss_hist_valid: list
    accuracy_hist_train: list
    accuracy_hist_valid: list


def _where(model, device):
    if device is None:
        for p in model.parameters():
            return p.device
        return torch.device("cpu")
    model.to(device)
    return torch.device(device)


def _epoch(model, dl, device, optimizer=None):
    loss_fn = nn.BCELoss()
    losses, hits = [], []
    for x, y in dl:
        x, y = x.to(device), y.to(device)
        pred = model(x)[:, 0]
        loss = loss_fn(pred, y.float())
        if optimizer is not None:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        losses.append(loss.item() * y.size(0))
        hits.append(((pred >= 0.5).float() == y).float().sum().item())
    n = len(dl.dataset)
    return math.fsum(losses) / n, math.fsum(hits) / n


def evaluate(model, dl, device=None):
    device = _where(model, device)
    model.eval()
    with torch.no_grad():
        return _epoch(model, dl, device)


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    device = _where(model, device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    history = History([], [], [], [])
    for epoch in range(num_epochs):
        model.train()
        loss, acc = _epoch(model, train_dl, device, optimizer)
        history.loss_hist_train.append(loss)
        history.accuracy_hist_train.append(acc)
        valid_loss, valid_acc = evaluate(model, valid_dl, device)
        history.loss_hist_valid.append(valid_loss)
        history.accuracy_hist_valid.append(valid_acc)
        if on_epoch is not None:
            on_epoch(epoch, history)
    return history
