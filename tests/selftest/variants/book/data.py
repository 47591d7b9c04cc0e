"""The book's data cells (Raschka et al., chapter 14), as the contract's functions.

The transforms, the CelebA calls and the Subsets are the book's own lines; the
one change is the dataset class, the kata's drop-in `CelebA` (the synthetic set
has no checksums torchvision knows). The book takes any n: asked for more
images than a split has, it does not refuse (the kata's rule), and that one
check fails.
"""

import torch
from torch.utils.data import DataLoader, Subset
from torchvision import transforms

from kata.celeba import CelebA as celeba_dataset

SMILING = 31


def get_smile(attr):
    return attr[31]


def train_transform():
    transform_train = transforms.Compose([
        transforms.RandomCrop([178, 178]),
        transforms.RandomHorizontalFlip(),
        transforms.Resize([64, 64]),
        transforms.ToTensor(),
    ])
    return transform_train


def eval_transform():
    transform = transforms.Compose([
        transforms.CenterCrop([178, 178]),
        transforms.Resize([64, 64]),
        transforms.ToTensor(),
    ])
    return transform


def load_splits(root, n_train=16000, n_valid=1000):
    image_path = root
    celeba_train_dataset = celeba_dataset(image_path, split='train',
                                          target_type='attr', download=False,
                                          transform=train_transform(), target_transform=get_smile)
    celeba_valid_dataset = celeba_dataset(image_path, split='valid',
                                          target_type='attr', download=False,
                                          transform=eval_transform(), target_transform=get_smile)
    celeba_test_dataset = celeba_dataset(image_path, split='test',
                                         target_type='attr', download=False,
                                         transform=eval_transform(), target_transform=get_smile)
    celeba_train_dataset = Subset(celeba_train_dataset, torch.arange(n_train))
    celeba_valid_dataset = Subset(celeba_valid_dataset, torch.arange(n_valid))
    return celeba_train_dataset, celeba_valid_dataset, celeba_test_dataset


def make_loaders(train, valid, test, batch_size=32):
    train_dl = DataLoader(train, batch_size, shuffle=True)
    valid_dl = DataLoader(valid, batch_size, shuffle=False)
    test_dl = DataLoader(test, batch_size, shuffle=False)
    return train_dl, valid_dl, test_dl
