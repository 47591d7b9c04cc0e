"""Exercise 4 · training: the book's loop, with histories of plain Python floats.

This is where the seed's bug was born. The book's loop adds each epoch's
numbers to four histories; on a GPU its loss history got Python numbers while
its accuracy history got tensors that stayed on the GPU. Training works either
way; plotting crashes later, far from the line that caused it. Here every
history entry must be a Python float in host memory, whatever device the model
trains on.

Run `pytest exercises/training.py` to check just this file, and `kata hint
training` (or `kata hint training FUNCTION`) when you are stuck.
"""

import torch
from torch import nn


def evaluate(model, dl, device=None):
    """Measure `model` on the batches of `dl`; return `(loss, accuracy)`.

    Specification:
    - `device=None` means the model's own device (that of its first
      parameter); given a device, the model is moved there first, in place
      (the caller's model object is the one that moves).
    - Every batch `(x, y)` is moved to that device before the model sees it.
    - The model runs in evaluation mode (no dropout) and without recording
      gradients; its weights are not changed.
    - The model's output for a batch has shape (N, 1); its first column is the
      predicted probability of the label 1.
    - loss: `nn.BCELoss()` of those probabilities against the labels as floats,
      averaged over the samples: each batch's loss weighted by its number of
      samples, summed, and divided by the number of samples in the dataset
      (`len(dl.dataset)`), so a small last batch counts as little as it should.
    - accuracy: the share of samples whose prediction (probability >= 0.5)
      matches the label, in [0, 1].
    - Both are returned as Python floats (`type(loss) is float`): not tensors,
      not NumPy numbers.

    Concept: measuring a model is not training it; and a number you keep must
    leave the device.
    """
    raise NotImplementedError(
        "`evaluate` is not written yet: see its docstring, and `kata hint training evaluate`")


def train(model, num_epochs, train_dl, valid_dl, device=None, on_epoch=None):
    """Train `model` as the book does; return its four histories.

    Returns `(loss_hist_train, loss_hist_valid, accuracy_hist_train,
    accuracy_hist_valid)` (a named tuple is welcome): four lists of
    `num_epochs` entries, each a Python float (`type(v) is float`).

    Specification:
    - `device=None`: the model's own device (that of its first parameter);
      given a device, the model is moved there first, in place: the caller's
      model object is the one that gets trained (no copies).
    - The loss is `nn.BCELoss()`, the optimizer `torch.optim.Adam` over the
      model's parameters with learning rate 0.001.
    - Each epoch, in training mode (dropout active): for every batch `(x, y)`
      of `train_dl`, in the book's order: the batch is moved to the device,
      the model predicts (the first column of its (N, 1) output), the loss
      against the labels as floats is computed, backpropagated, the optimizer
      steps, and the gradients are zeroed.
    - The epoch's training loss and accuracy are measured as in `evaluate`,
      over the batches just trained on: the batch losses weighted by batch
      size, the correct predictions (probability >= 0.5 matching the label)
      counted, both divided by `len(train_dl.dataset)`.
    - After the epoch's training, the validation entries are what `evaluate`
      gives for `valid_dl` with the model as it is then (evaluation mode, no
      gradients).
    - After each epoch, if `on_epoch` is given, call `on_epoch(epoch,
      history)` with the 0-based epoch number and the four lists so far (one
      entry longer each time).

    Concept: the training loop, and what each number it keeps is: its type,
    and where it lives.
    """
    raise NotImplementedError(
        "`train` is not written yet: see its docstring, and `kata hint training train`")
