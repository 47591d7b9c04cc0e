"""An independent implementation of exercise 2, written from CONTRACT.md alone."""

from torch.utils.data import DataLoader, Subset
from torchvision import transforms as T

from kata.celeba import CelebA

SMILING = 31


def get_smile(attr):
    return attr[SMILING]


def train_transform():
    # Integer sizes: a square crop of 178, then Resize(64) of a square is 64x64.
    return T.Compose([T.RandomCrop(178), T.RandomHorizontalFlip(), T.Resize(64), T.ToTensor()])


def eval_transform():
    return T.Compose([T.CenterCrop(178), T.Resize(64), T.ToTensor()])


def load_splits(root, n_train=16000, n_valid=1000):
    def split(name, transform):
        return CelebA(root=root, split=name, target_type="attr", download=False, transform=transform,
                      target_transform=get_smile)

    train, valid, test = split("train", train_transform()), split("valid", eval_transform()), \
        split("test", eval_transform())
    for name, ds, n in (("train", train, n_train), ("valid", valid, n_valid)):
        if n > len(ds):
            raise ValueError(f"the {name} split holds {len(ds)} images; {n} were asked for")
    return Subset(train, range(n_train)), Subset(valid, range(n_valid)), test


def make_loaders(train, valid, test, batch_size=32):
    return tuple(DataLoader(ds, batch_size=batch_size, shuffle=ds is train) for ds in (train, valid, test))
