"""The learner's note's training loop (the seed), as the contract's functions.

Its lines, with the contract's plumbing only (the device argument instead of a
global, on_epoch): the correct predictions are summed as `is_correct.sum()`, a
tensor on the model's device, and the live plot is drawn inside `train`. On the
CPU the histories hold CPU tensors; on an accelerator, `ax2.plot(...)` is the
seed's crash ("can't convert cuda:0 device type tensor to numpy").
"""

import matplotlib.pyplot as plt
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
    model.eval()
    with torch.no_grad():
        loss_tmp = 0
        accuracy_tmp = 0
        for x_batch, y_batch in dl:
            x_batch, y_batch = x_batch.to(device), y_batch.to(device)
            pred = model(x_batch)[:, 0]
            loss = loss_fn(pred, y_batch.float())
            loss_tmp += loss.item()*y_batch.size(0)
            is_correct = ((pred>=0.5).float() == y_batch).float()
            accuracy_tmp += is_correct.sum()
    return loss_tmp / len(dl.dataset), accuracy_tmp / len(dl.dataset)


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    device = _device(model, device)
    loss_fn = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

    loss_hist_train = []
    accuracy_hist_train = []
    loss_hist_valid = []
    accuracy_hist_valid = []
    x_arr = []

    plt.ion()

    fig = plt.figure(figsize=(12, 4))
    ax1 = fig.add_subplot(1, 2, 1)
    ax2 = fig.add_subplot(1, 2, 2)

    for epoch in range(num_epochs):
        model.train()
        loss_tmp = 0
        accuracy_tmp = 0
        for x_batch, y_batch in train_dl:
            x_batch, y_batch = x_batch.to(device), y_batch.to(device)
            optimizer.zero_grad()
            pred = model(x_batch)[:, 0]
            loss = loss_fn(pred, y_batch.float())
            loss.backward()
            optimizer.step()

            loss_tmp += loss.item()*y_batch.size(0)
            is_correct = ((pred>=0.5).float() == y_batch).float()
            accuracy_tmp += is_correct.sum()

        loss_hist_train.append(loss_tmp / len(train_dl.dataset))
        accuracy_hist_train.append(accuracy_tmp / len(train_dl.dataset))

        model.eval()
        with torch.no_grad():
            loss_tmp = 0
            accuracy_tmp = 0

            for x_batch, y_batch in valid_dl:
                x_batch, y_batch = x_batch.to(device), y_batch.to(device)
                pred = model(x_batch)[:, 0]
                loss = loss_fn(pred, y_batch.float())
                loss_tmp += loss.item()*y_batch.size(0)
                is_correct = ((pred>=0.5).float() == y_batch).float()
                accuracy_tmp += is_correct.sum()

        loss_hist_valid.append(loss_tmp / len(valid_dl.dataset))
        accuracy_hist_valid.append(accuracy_tmp / len(valid_dl.dataset))

        ax1.clear()
        ax2.clear()
        x_arr.append(epoch)
        ax1.plot(x_arr, loss_hist_train, '-o', label='Train loss')
        ax1.plot(x_arr, loss_hist_valid, '--<', label='Validation loss')
        ax1.set_xlabel('Epoch', size=15)
        ax1.set_ylabel('Loss', size=15)
        ax1.legend(fontsize=15)

        ax2.plot(x_arr, accuracy_hist_train, '-o', label='Train acc.')
        ax2.plot(x_arr, accuracy_hist_valid, '--<', label='Validation acc.')
        ax2.set_xlabel('Epoch', size=15)
        ax2.set_ylabel('Accuracy', size=15)
        ax2.legend(fontsize=15)

        plt.draw()
        plt.pause(0.01)  # the note's 0.1 s, shortened: the checks call train many times
        print(f'epoch {epoch+1} accuracy: {accuracy_hist_train[epoch]:.4f} '
              f'valid accuracy: {accuracy_hist_valid[epoch]:.4f}')
        if on_epoch is not None:
            on_epoch(epoch, (loss_hist_train, loss_hist_valid, accuracy_hist_train, accuracy_hist_valid))

    plt.close(fig)  # the note ends with plt.show(); the checks run without a screen

    return loss_hist_train, loss_hist_valid, accuracy_hist_train, accuracy_hist_valid
