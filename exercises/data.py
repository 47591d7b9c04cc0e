"""Exercise 2 · data: CelebA smiles.

The book (Raschka et al., *Machine Learning with PyTorch and Scikit-Learn*,
chapter 14) trains a smile classifier on CelebA: 202,599 aligned faces, 178
pixels wide and 218 high, each with 40 yes/no attributes. Here you write its
data pipeline: the label, the transforms, the splits and the loaders. Run
`pytest exercises/data.py` to check just this file, and `kata hint data` (or
`kata hint data FUNCTION`) when you are stuck.

No CelebA? `kata data --root data` draws a synthetic one in the real on-disk
layout (the checks make their own small one); real CelebA goes in
`data/celeba/` (see the README).

Decisions this kata makes where the book says nothing (the checks hold you to
them):
- `load_splits` raises `ValueError` when asked for more images than a split has
  (the book's subset would only fail later, at some batch), and its message
  says both how many images were asked for and how many the split has.
- `make_loaders` keeps the last, smaller batch (DataLoader's default).
"""

import torch
from torch.utils.data import DataLoader, Subset
from torchvision import transforms

from kata.celeba import CelebA

# The label: the index (0-based) of the 'Smiling' attribute among CelebA's 40,
# in the order of list_attr_celeba.txt, as an int.
SMILING = None


def get_smile(attr):
    """Return the Smiling attribute of one image's attribute vector.

    Specification:
    - `attr` is the tensor of 40 zeros and ones that CelebA gives for one image
      with `target_type='attr'`, in the order of the attribute list.
    - The result is the entry of `attr` for the Smiling attribute (the index
      `SMILING` names), as the book's target transform gives it: a 0-d tensor
      of the vector's own dtype, not converted to a Python number or to
      another dtype (the DataLoader batches either kind into one label tensor;
      the kata holds you to the book's).

    Concept: a `target_transform` turns each image's raw target into the label
    the model learns: here, "is this person smiling?".
    """
    raise NotImplementedError(
        "`get_smile` is not written yet: see its docstring, and `kata hint data get_smile`")


def train_transform():
    """Return the book's transform for training images, one `transforms.Compose`.

    Specification: the book's four steps, in the book's order, each with
    torchvision's default settings except the sizes given:
    1. a random crop of 178x178 pixels out of the 178x218 face;
    2. a random horizontal flip (half of the images);
    3. a resize to 64x64 (height and width both given);
    4. the conversion to a float tensor of shape (3, 64, 64) with values in
       [0, 1].
    Under the same `torch.manual_seed`, it must give exactly what the book's
    transform gives (to float precision). torchvision's `transforms.v2` is
    welcome too; it draws its random numbers in another order, so there each
    result must be one of the book's crops and flips.

    Concept: augmentation. Training images are randomised, so the model sees a
    slightly different picture of each face every epoch.
    """
    raise NotImplementedError(
        "`train_transform` is not written yet: see its docstring, and `kata hint data train_transform`")


def eval_transform():
    """Return the book's transform for validation and test images, one `Compose`.

    Specification: the book's three steps, in the book's order, with
    torchvision's default settings except the sizes given:
    1. the 178x178 square at the centre of the 178x218 face;
    2. a resize to 64x64 (height and width both given);
    3. the conversion to a float tensor of shape (3, 64, 64) in [0, 1].
    Nothing random: the same image always gives the same tensor.

    Concept: evaluation measures the model, so every epoch must see the same
    images.
    """
    raise NotImplementedError(
        "`eval_transform` is not written yet: see its docstring, and `kata hint data eval_transform`")


def load_splits(root, n_train=16000, n_valid=1000):
    """Load CelebA's three splits as the book does; return `(train, valid, test)`.

    Specification:
    - `root` is the folder that holds `celeba/`.
    - Each split ('train', 'valid', 'test') is loaded once, with the `CelebA`
      class imported at the top of this file (it reads real CelebA exactly as
      `torchvision.datasets.CelebA` does, with the same signature, and also the
      kata's synthetic set, which torchvision's checksums would reject).
    - As in the book: the labels come from the 40 attributes, reduced to the
      Smiling one by `get_smile`; nothing is downloaded (the data must already
      be on disk); the train split gets `train_transform()`, valid and test
      get `eval_transform()`.
    - train and valid are `Subset`s holding the FIRST `n_train` and `n_valid`
      images of their split, in order (the book's 16,000 and 1,000 are the
      defaults); test is returned whole, as the dataset itself.
    - Asked for more images than a split has: raise `ValueError` with a message
      that says how many were asked for and how many the split has.
    - No dataset under `root`: let the loader's own error through (it says how
      to get one).

    Concept: a dataset is an indexable collection; a `Subset` is a view of some
    of its indices, nothing copied or loaded in advance.
    """
    raise NotImplementedError(
        "`load_splits` is not written yet: see its docstring, and `kata hint data load_splits`")


def make_loaders(train, valid, test, batch_size=32):
    """Wrap the three datasets in `DataLoader`s; return `(train_dl, valid_dl, test_dl)`.

    Specification:
    - one `torch.utils.data.DataLoader` per dataset, in that order, each
      loading exactly the dataset given for it, in batches of `batch_size`
      (the book's 32 is the default);
    - every image once per pass, the last batch possibly smaller;
    - only `train_dl` gives its images in a new random order each pass;
      `valid_dl` and `test_dl` keep the datasets' order.

    Concept: batching, and why only training needs shuffling.
    """
    raise NotImplementedError(
        "`make_loaders` is not written yet: see its docstring, and `kata hint data make_loaders`")
