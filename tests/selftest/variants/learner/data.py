"""A learner's data pipeline, from the stub's specification alone (issue #19): the index looked up by
name, pathlib and os for the root, tuple and int sizes, Subset over a range, keyword arguments,
an f-string for the refusal, a helper per split."""

import os
from pathlib import Path

from torch.utils.data import DataLoader, Subset
from torchvision import transforms

from kata.celeba import ATTRIBUTE_NAMES, CelebA

# The label: the index (0-based) of the 'Smiling' attribute among CelebA's 40.
SMILING = ATTRIBUTE_NAMES.index("Smiling")


def get_smile(attr):
    return attr[SMILING]


def train_transform():
    return transforms.Compose([
        transforms.RandomCrop((178, 178)),
        transforms.RandomHorizontalFlip(p=0.5),
        transforms.Resize((64, 64)),
        transforms.ToTensor(),
    ])


def eval_transform():
    return transforms.Compose([transforms.CenterCrop(178), transforms.Resize(64), transforms.ToTensor()])


def _split(root: Path, name: str, transform):
    return CelebA(root=os.fspath(root), split=name, target_type="attr", transform=transform,
                  target_transform=get_smile, download=False)


def _first(dataset, n: int, name: str) -> Subset:
    available = len(dataset)
    if n > available:
        raise ValueError(f"the {name} split has {available} images; {n} were asked for")
    return Subset(dataset, range(n))


def load_splits(root, n_train=16000, n_valid=1000):
    root = Path(root)
    train = _first(_split(root, "train", train_transform()), n_train, "train")
    valid = _first(_split(root, "valid", eval_transform()), n_valid, "valid")
    test = _split(root, "test", eval_transform())
    return train, valid, test


def make_loaders(train, valid, test, batch_size=32):
    return (DataLoader(train, batch_size=batch_size, shuffle=True, drop_last=False, num_workers=0),
            DataLoader(valid, batch_size=batch_size, shuffle=False),
            DataLoader(test, batch_size=batch_size))
