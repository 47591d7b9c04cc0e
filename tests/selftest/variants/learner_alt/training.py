"""More of a learner's training loop (issue #19): validation written inline with torch.inference_mode()
as a block, nn.functional.binary_cross_entropy, zero_grad(set_to_none=False) at the end, x.shape[0],
device given as a string, a named tuple built at the end."""

from collections import namedtuple

import torch
import torch.nn.functional as F

Histories = namedtuple("Histories", "loss_hist_train loss_hist_valid accuracy_hist_train accuracy_hist_valid")


def _measure(model, dl, device):
    model.eval()
    total, right = 0.0, 0.0
    with torch.inference_mode():
        for x, y in dl:
            x, y = x.to(device), y.to(device)
            prob = model(x)[:, 0]
            total += F.binary_cross_entropy(prob, y.float()).item() * x.shape[0]
            right += (prob.ge(0.5).long() == y).sum().item()
    return total / len(dl.dataset), right / len(dl.dataset)


def evaluate(model, dl, device=None):
    if device is not None:
        model.to(device)
    return _measure(model, dl, device if device is not None else next(model.parameters()).device)


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    if device is None:
        device = next(model.parameters()).device
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    lt, lv, at, av = [], [], [], []
    for epoch in range(num_epochs):
        model.train()
        total, right = 0.0, 0.0
        for x, y in train_dl:
            x, y = x.to(device), y.to(device)
            prob = model(x)[:, 0]
            loss = F.binary_cross_entropy(prob, y.float())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
            total += loss.item() * x.shape[0]
            right += (prob.detach().ge(0.5).float() == y.float()).sum().item()
        lt.append(total / len(train_dl.dataset))
        at.append(right / len(train_dl.dataset))
        valid_loss, valid_acc = _measure(model, valid_dl, device)
        lv.append(valid_loss)
        av.append(valid_acc)
        if on_epoch:
            on_epoch(epoch, Histories(lt, lv, at, av))
    return Histories(lt, lv, at, av)
