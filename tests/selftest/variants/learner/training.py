"""A learner's training loop, from the stub's specification alone (issue #19): evaluate under
@torch.no_grad() as a decorator, enumerate, samples counted with x.size(0), float(loss),
.sum().item(), model.zero_grad() at the start of each batch, a move only where it is needed."""

import torch
from torch import nn


def _device(model, device):
    if device is None:
        return next(model.parameters()).device
    device = torch.device(device)
    if next(model.parameters()).device != device:
        model.to(device)
    return device


@torch.no_grad()
def evaluate(model, dl, device=None):
    device = _device(model, device)
    model.eval()
    criterion = nn.BCELoss()
    loss_sum, right, count = 0.0, 0, 0
    for _, (x, y) in enumerate(dl):
        x, y = x.to(device), y.to(device)
        p = model(x)[:, 0]
        loss_sum += float(criterion(p, y.float())) * x.size(0)
        right += int((((p >= 0.5).long()) == y).sum().item())
        count += x.size(0)
    return loss_sum / count, right / count


def _train_one_epoch(model, dl, criterion, optimizer, device):
    model.train()
    loss_sum, right, count = 0.0, 0.0, 0
    for _step, (x, y) in enumerate(dl):
        model.zero_grad()
        x = x.to(device)
        y = y.to(device)
        p = model(x)[:, 0]
        loss = criterion(p, y.float())
        loss.backward()
        optimizer.step()
        loss_sum += loss.item() * len(y)
        right += ((p >= 0.5).float() == y).float().sum().item()
        count += len(y)
    return loss_sum / count, right / count


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    device = _device(model, device)
    criterion = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    history = ([], [], [], [])
    for epoch in range(num_epochs):
        loss, acc = _train_one_epoch(model, train_dl, criterion, optimizer, device)
        valid_loss, valid_acc = evaluate(model, valid_dl, device)
        for h, value in zip(history, (loss, valid_loss, acc, valid_acc)):
            h.append(float(value))
        if on_epoch is not None:
            on_epoch(epoch, history)
    return history
