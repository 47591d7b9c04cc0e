"""A third independent implementation, in today's idioms: training."""

import torch
import torch.nn as nn


@torch.inference_mode()
def evaluate(model, dl, device=None):
    device = device or next(model.parameters()).device
    model.to(device)
    model.eval()
    criterion = nn.BCELoss(reduction="sum")
    total_loss = torch.tensor(0.0, device=device)
    correct = torch.tensor(0, device=device)
    count = 0
    for x, y in dl:
        x, y = x.to(device), y.to(device)
        p = model(x).squeeze(1)
        total_loss += criterion(p, y.float())
        correct += ((p >= 0.5).long() == y).sum()
        count += len(y)
    return total_loss.item() / count, correct.item() / count


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    if device is not None:
        model = model.to(device)
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.BCELoss()
    hist = ([], [], [], [])
    for epoch in range(num_epochs):
        model.train()
        running, hits, seen = 0.0, 0, 0
        for x, y in train_dl:
            x = x.to(device)
            y = y.to(device).float()
            opt.zero_grad()
            out = model(x).view(-1)
            loss = criterion(out, y)
            loss.backward()
            opt.step()
            running += loss.item() * x.size(0)
            hits += int(((out >= 0.5).float() == y).sum())
            seen += x.size(0)
        vl, va = evaluate(model, valid_dl, device)
        hist[0].append(running / seen)
        hist[1].append(vl)
        hist[2].append(hits / seen)
        hist[3].append(va)
        if on_epoch:
            on_epoch(epoch, hist)
    return hist
