"""Reference solution: the book's training loop, with histories of Python floats."""

from collections import namedtuple

import torch
from torch import nn

History = namedtuple('History', ['loss_hist_train', 'loss_hist_valid',
                                 'accuracy_hist_train', 'accuracy_hist_valid'])


def _model_device(model):
    for tensor in model.parameters():
        return tensor.device
    return torch.device('cpu')


def evaluate(model, dl, device=None):
    if device is None:
        device = _model_device(model)
    else:
        model.to(device)
    loss_fn = nn.BCELoss()
    model.eval()
    loss_total, correct_total = 0.0, 0.0
    with torch.no_grad():
        for x_batch, y_batch in dl:
            x_batch = x_batch.to(device)
            y_batch = y_batch.to(device)
            pred = model(x_batch)[:, 0]
            loss = loss_fn(pred, y_batch.float())
            loss_total += loss.item() * y_batch.size(0)
            is_correct = ((pred >= 0.5).float() == y_batch).float()
            correct_total += is_correct.sum().item()
    n = len(dl.dataset)
    return loss_total / n, correct_total / n


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    if device is None:
        device = _model_device(model)
    else:
        model.to(device)
    loss_fn = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    history = History([], [], [], [])
    for epoch in range(num_epochs):
        model.train()
        loss_total, correct_total = 0.0, 0.0
        for x_batch, y_batch in train_dl:
            x_batch = x_batch.to(device)
            y_batch = y_batch.to(device)
            pred = model(x_batch)[:, 0]
            loss = loss_fn(pred, y_batch.float())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            loss_total += loss.item() * y_batch.size(0)
            is_correct = ((pred >= 0.5).float() == y_batch).float()
            correct_total += is_correct.sum().item()
        history.loss_hist_train.append(loss_total / len(train_dl.dataset))
        history.accuracy_hist_train.append(correct_total / len(train_dl.dataset))

        valid_loss, valid_accuracy = evaluate(model, valid_dl, device)
        history.loss_hist_valid.append(valid_loss)
        history.accuracy_hist_valid.append(valid_accuracy)
        if on_epoch is not None:
            on_epoch(epoch, history)
    return history
