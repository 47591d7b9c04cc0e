"""CelebA smiles, written independently."""

import torchvision.transforms as T
from torch.utils.data import DataLoader, Subset

from kata.celeba import CelebA

SMILING = 31
CROP, SIZE = (178, 178), (64, 64)


def get_smile(attr):
    return attr[SMILING]


def train_transform():
    return T.Compose([T.RandomCrop(list(CROP)), T.RandomHorizontalFlip(), T.Resize(list(SIZE)), T.ToTensor()])


def eval_transform():
    return T.Compose([T.CenterCrop(list(CROP)), T.Resize(list(SIZE)), T.ToTensor()])


def _split(root, split, transform):
    return CelebA(root, split=split, target_type="attr", download=False, transform=transform,
                  target_transform=get_smile)


def _first(dataset, n, name):
    if n > len(dataset):
        raise ValueError(f"the {name} split has {len(dataset)} images, fewer than the {n} asked for")
    return Subset(dataset, list(range(n)))


def load_splits(root, n_train=16000, n_valid=1000):
    train = _first(_split(root, "train", train_transform()), n_train, "train")
    valid = _first(_split(root, "valid", eval_transform()), n_valid, "valid")
    test = _split(root, "test", eval_transform())
    return train, valid, test


def make_loaders(train, valid, test, batch_size=32):
    return tuple(DataLoader(ds, batch_size=batch_size, shuffle=(ds is train)) for ds in (train, valid, test))
