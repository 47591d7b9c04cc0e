"""The book's own pieces (chapter 14), in one place, for the checks to compare with.

Raschka et al., *Machine Learning with PyTorch and Scikit-Learn*, chapter 14:
the CelebA smile classifier. The exercises rebuild these; the checks hold the
learner's versions to them.
"""

from __future__ import annotations

import torch
from torch import nn
from torchvision import transforms as T

from kata.data.layout import SMILING
from kata.records.history import History

__all__ = ["BOOK_LAYERS", "BOOK_PARAMETERS", "CROP", "IMAGE", "book_cnn", "book_epoch", "book_eval_transform",
           "book_train", "book_train_candidates", "book_train_transform", "same_weights", "smile_of"]

CROP = [178, 178]   # CelebA's aligned faces are 178 wide: a square crop of that side
IMAGE = [64, 64]    # what the CNN sees

# The book's layers, in order: (type, constructor arguments).
BOOK_LAYERS = [
    (nn.Conv2d, dict(in_channels=3, out_channels=32, kernel_size=3, padding=1)),
    (nn.ReLU, {}),
    (nn.MaxPool2d, dict(kernel_size=2)),
    (nn.Dropout, dict(p=0.5)),
    (nn.Conv2d, dict(in_channels=32, out_channels=64, kernel_size=3, padding=1)),
    (nn.ReLU, {}),
    (nn.MaxPool2d, dict(kernel_size=2)),
    (nn.Dropout, dict(p=0.5)),
    (nn.Conv2d, dict(in_channels=64, out_channels=128, kernel_size=3, padding=1)),
    (nn.ReLU, {}),
    (nn.MaxPool2d, dict(kernel_size=2)),
    (nn.Conv2d, dict(in_channels=128, out_channels=256, kernel_size=3, padding=1)),
    (nn.ReLU, {}),
    (nn.AvgPool2d, dict(kernel_size=8)),
    (nn.Flatten, {}),
    (nn.Linear, dict(in_features=256, out_features=1)),
    (nn.Sigmoid, {}),
]
BOOK_PARAMETERS = 388_673


def book_cnn() -> nn.Sequential:
    """The book's CNN, built from the table above (in the book's order)."""
    return nn.Sequential(*(cls(**kwargs) for cls, kwargs in BOOK_LAYERS))


def book_train_transform() -> T.Compose:
    """The book's training transform: a random 178x178 crop, a random flip, 64x64, a tensor."""
    return T.Compose([T.RandomCrop(CROP), T.RandomHorizontalFlip(), T.Resize(IMAGE), T.ToTensor()])


def book_eval_transform() -> T.Compose:
    """The book's validation and test transform: the centre 178x178, 64x64, a tensor."""
    return T.Compose([T.CenterCrop(CROP), T.Resize(IMAGE), T.ToTensor()])


def book_train_candidates(image) -> list[torch.Tensor]:
    """Every tensor the book's training transform can make of a 178-wide face: each crop, flipped or not."""
    from PIL import Image

    out = []
    for top in range(image.height - CROP[0] + 1):
        crop = image.crop((0, top, CROP[1], top + CROP[0]))
        for picture in (crop, crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT)):
            out.append(T.ToTensor()(T.Resize(IMAGE)(picture)))
    return out


def smile_of(attr: torch.Tensor) -> torch.Tensor:
    """The book's label: attribute 31 of 40, Smiling."""
    return attr[SMILING]


def book_epoch(model, dl, optimizer=None, loss_fn=None, zero_grad=True, device="cpu"):
    """One pass as the book writes it (`.item()` every batch); trains when given an optimizer.
    Returns (mean loss, accuracy) over ``len(dl.dataset)`` samples."""
    loss_fn = loss_fn or nn.BCELoss()
    total_loss = total_correct = 0.0
    for x, y in dl:
        x, y = x.as_subclass(torch.Tensor).to(device), y.as_subclass(torch.Tensor).to(device)
        pred = model(x)[:, 0]
        loss = loss_fn(pred, y.float())
        if optimizer is not None:
            loss.backward()
            optimizer.step()
            if zero_grad:
                optimizer.zero_grad()
        total_loss += loss.item() * y.size(0)
        total_correct += ((pred >= 0.5).float() == y).float().sum().item()
    return total_loss / len(dl.dataset), total_correct / len(dl.dataset)


def same_weights(after, model: nn.Module, atol: float = 1e-6) -> bool:
    """Whether the weights ``after`` (a record's, in order) are ``model``'s parameters, wherever either lives."""
    return all(torch.allclose(p.detach().cpu(), q.detach().cpu(), atol=atol) for p, q in zip(after, model.parameters()))


def book_train(model, epochs, train_dl, valid_dl, lr=0.001, loss_fn=None, zero_grad=True):
    """The book's training loop: Adam, BCELoss, per-sample means; returns the four histories."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = History([], [], [], [])
    for _ in range(epochs):
        model.train()
        loss, acc = book_epoch(model, train_dl, optimizer, loss_fn, zero_grad)
        model.eval()
        with torch.no_grad():
            valid_loss, valid_acc = book_epoch(model, valid_dl, loss_fn=loss_fn)
        for h, v in zip(history, (loss, valid_loss, acc, valid_acc), strict=True):
            h.append(v)
    return history
