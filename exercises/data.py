"""Exercise 2 · data: CelebA smiles.

The book (Raschka et al., *Machine Learning with PyTorch and Scikit-Learn*,
chapter 14) trains a smile classifier on CelebA: 202,599 aligned faces, 178
pixels wide and 218 high, each with 40 yes/no attributes. Here you write its
data pipeline. Run `pytest exercises/data.py` to check just this file.

No CelebA? `kata data --root data` draws a synthetic one in the real on-disk
layout (the checks make their own small one); real CelebA goes in
`data/celeba/` (see the README).

Decisions this kata makes where the book says nothing (the checks hold you to
them):
- `load_splits` raises `ValueError` when asked for more images than a split has
  (the book's `Subset(ds, range(16000))` would only fail later, at some batch),
  and the message says how many there are.
- `make_loaders` keeps the last, smaller batch (DataLoader's default).
"""

import torch
from torch.utils.data import DataLoader, Subset
from torchvision import transforms

from kata.celeba import CelebA

# Which of CelebA's 40 attributes is 'Smiling'? Its index (0-based) in
# list_attr_celeba.txt (kata.celeba.ATTRIBUTE_NAMES lists them in order).
# Careful: the book's first printing used 18, which is 'Heavy_Makeup' (see its
# errata): a model that learns make-up.
SMILING = None


def get_smile(attr):
    """Return the Smiling attribute of one image's attribute vector.

    `attr` is the tensor of 40 zeros and ones that CelebA gives with
    `target_type='attr'`; used as `target_transform`, this turns each label into
    "is this person smiling?".
    """
    raise NotImplementedError("return the attribute at index SMILING (31) of `attr`")


def train_transform():
    """The book's training transform, as one `transforms.Compose`:

    RandomCrop to 178x178 (a random square out of the 178x218 face), a random
    horizontal flip (half the time), Resize to 64x64, then ToTensor (a float
    tensor of shape (3, 64, 64) with values in [0, 1]).

    Concept: augmentation. Only training images are randomised, so the model
    sees a slightly different picture each epoch; crop BEFORE resizing, or the
    face is squashed out of shape.
    Hint: `transforms.Compose([transforms.RandomCrop([178, 178]), ...])`.
    """
    raise NotImplementedError("return transforms.Compose([RandomCrop, RandomHorizontalFlip, Resize, ToTensor])")


def eval_transform():
    """The book's transform for validation and test images, as one `Compose`:

    CenterCrop to 178x178, Resize to 64x64, ToTensor. Nothing random: the same
    image must always give the same tensor, so the scores can be compared
    from epoch to epoch.
    """
    raise NotImplementedError("return transforms.Compose([CenterCrop, Resize, ToTensor])")


def load_splits(root, n_train=16000, n_valid=1000):
    """Load CelebA's three splits as the book does; return (train, valid, test).

    - `root` is the folder that holds `celeba/`.
    - Load each split with `CelebA(root, split=..., target_type='attr',
      download=False, transform=..., target_transform=get_smile)`, using the
      `CelebA` imported above from `kata.celeba` (it reads real CelebA exactly as
      `torchvision.datasets.CelebA` does, and also the kata's synthetic set,
      which torchvision's checksum check would reject).
    - The train split gets `train_transform()`; valid and test `eval_transform()`.
    - train and valid are `Subset`s of their first `n_train` and `n_valid`
      images (`Subset(ds, torch.arange(n))`); test is returned whole.
    - Asked for more images than a split has: raise `ValueError` saying how
      many there are.
    """
    raise NotImplementedError("load the three splits with kata.celeba.CelebA, then take Subsets of train and valid")


def make_loaders(train, valid, test, batch_size=32):
    """Wrap the three datasets in `DataLoader`s of `batch_size`; return
    (train_dl, valid_dl, test_dl).

    Only `train_dl` shuffles: a new order each epoch helps training, while
    validation and test scores don't depend on the order at all.
    """
    raise NotImplementedError("return three DataLoaders; only the training one has shuffle=True")
