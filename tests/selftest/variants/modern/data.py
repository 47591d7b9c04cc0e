"""A third independent implementation, in today's idioms: data."""

import torch
from torch.utils.data import DataLoader, Subset
from torchvision.transforms import v2

from kata.celeba import CelebA

SMILING = 31


def get_smile(attr):
    return attr[SMILING]


def train_transform():
    return v2.Compose([v2.RandomCrop(178), v2.RandomHorizontalFlip(), v2.Resize((64, 64)),
                       v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])


def eval_transform():
    return v2.Compose([v2.CenterCrop(178), v2.Resize((64, 64)),
                       v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])


def load_splits(root, n_train=16000, n_valid=1000):
    kw = dict(target_type="attr", download=False, target_transform=get_smile)
    train = CelebA(root, split="train", transform=train_transform(), **kw)
    valid = CelebA(root, split="valid", transform=eval_transform(), **kw)
    test = CelebA(root, split="test", transform=eval_transform(), **kw)
    for n, ds, what in ((n_train, train, "train"), (n_valid, valid, "valid")):
        if n > len(ds):
            raise ValueError(f"{n} {what} images asked for, the split has {len(ds)}")
    return Subset(train, range(n_train)), Subset(valid, range(n_valid)), test


def make_loaders(train, valid, test, batch_size=32):
    return (DataLoader(train, batch_size=batch_size, shuffle=True),
            DataLoader(valid, batch_size=batch_size),
            DataLoader(test, batch_size=batch_size))
