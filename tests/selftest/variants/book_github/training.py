"""The book's training loop as its GitHub notebook has it (Raschka et al., chapter 14).

The correct predictions are summed with `is_correct.sum().cpu()`: a CPU tensor,
on any device. It plots, but the histories hold tensors, not the contract's
Python floats. (The contract's plumbing is added: the device argument,
on_epoch, the loss and optimizer made inside, an evaluate from the validation
loop.)
"""

import torch
import torch.nn as nn


def _device(model, device):
    if device is None:
        return next(model.parameters()).device
    model.to(device)
    return device


def evaluate(model, dl, device=None):
    device = _device(model, device)
    loss_fn = nn.BCELoss()
    loss_hist_valid = accuracy_hist_valid = 0
    model.eval()
    with torch.no_grad():
        for x_batch, y_batch in dl:
            x_batch = x_batch.to(device)
            y_batch = y_batch.to(device)
            pred = model(x_batch)[:, 0]
            loss = loss_fn(pred, y_batch.float())
            loss_hist_valid += loss.item()*y_batch.size(0)
            is_correct = ((pred>=0.5).float() == y_batch).float()
            accuracy_hist_valid += is_correct.sum().cpu()
    loss_hist_valid /= len(dl.dataset)
    accuracy_hist_valid /= len(dl.dataset)
    return loss_hist_valid, accuracy_hist_valid


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    device = _device(model, device)
    loss_fn = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_hist_train = [0] * num_epochs
    accuracy_hist_train = [0] * num_epochs
    loss_hist_valid = [0] * num_epochs
    accuracy_hist_valid = [0] * num_epochs
    for epoch in range(num_epochs):
        model.train()
        for x_batch, y_batch in train_dl:
            x_batch = x_batch.to(device)
            y_batch = y_batch.to(device)
            pred = model(x_batch)[:, 0]
            loss = loss_fn(pred, y_batch.float())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            loss_hist_train[epoch] += loss.item()*y_batch.size(0)
            is_correct = ((pred>=0.5).float() == y_batch).float()
            accuracy_hist_train[epoch] += is_correct.sum().cpu()

        loss_hist_train[epoch] /= len(train_dl.dataset)
        accuracy_hist_train[epoch] /= len(train_dl.dataset)

        model.eval()
        with torch.no_grad():
            for x_batch, y_batch in valid_dl:
                x_batch = x_batch.to(device)
                y_batch = y_batch.to(device)
                pred = model(x_batch)[:, 0]
                loss = loss_fn(pred, y_batch.float())
                loss_hist_valid[epoch] += loss.item()*y_batch.size(0)
                is_correct = ((pred>=0.5).float() == y_batch).float()
                accuracy_hist_valid[epoch] += is_correct.sum().cpu()

        loss_hist_valid[epoch] /= len(valid_dl.dataset)
        accuracy_hist_valid[epoch] /= len(valid_dl.dataset)

        print(f'Epoch {epoch+1} accuracy: {accuracy_hist_train[epoch]:.4f} val_accuracy: '
              f'{accuracy_hist_valid[epoch]:.4f}')
        if on_epoch is not None:
            on_epoch(epoch, (loss_hist_train[:epoch + 1], loss_hist_valid[:epoch + 1],
                             accuracy_hist_train[:epoch + 1], accuracy_hist_valid[:epoch + 1]))
    return loss_hist_train, loss_hist_valid, accuracy_hist_train, accuracy_hist_valid
