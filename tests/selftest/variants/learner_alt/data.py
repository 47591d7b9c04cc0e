"""More of a learner's data pipeline (issue #19): CelebA imported under another name, the Smiling index
written with a comment, keyword-only helper, the first n as a list of indices, loaders in a loop."""

from torch.utils.data import DataLoader, Subset
from torchvision import transforms as T

from kata.celeba import CelebA as Faces

# 'Smiling' is the 32nd name of list_attr_celeba.txt's header, so index 31 counting from 0.
SMILING = 31


def get_smile(attr):
    smile = attr[SMILING]
    return smile


def train_transform():
    steps = [T.RandomCrop(size=[178, 178]), T.RandomHorizontalFlip(), T.Resize(size=[64, 64]), T.ToTensor()]
    return T.Compose(steps)


def eval_transform():
    return T.Compose([T.CenterCrop(size=(178, 178)), T.Resize(size=(64, 64)), T.ToTensor()])


def _load(root, *, split, transform):
    return Faces(root, split, "attr", transform, get_smile, False)


def load_splits(root, n_train=16000, n_valid=1000):
    datasets = {}
    for split, n, transform in (("train", n_train, train_transform()), ("valid", n_valid, eval_transform())):
        full = _load(root, split=split, transform=transform)
        if len(full) < n:
            raise ValueError("asked for " + str(n) + " " + split + " images but the split has " + str(len(full)))
        datasets[split] = Subset(full, list(range(n)))
    return datasets["train"], datasets["valid"], _load(root, split="test", transform=eval_transform())


def make_loaders(train, valid, test, batch_size=32):
    return tuple(DataLoader(ds, batch_size, shuffle=(ds is train)) for ds in (train, valid, test))
