"""Reference solution: CelebA smiles, the book's data pipeline (chapter 14)."""

import torch
from torch.utils.data import DataLoader, Subset
from torchvision import transforms

from kata.celeba import CelebA

SMILING = 31  # attribute 31 of 40 is 'Smiling' (the first printing's 18 is 'Heavy_Makeup')


def get_smile(attr):
    return attr[SMILING]


def train_transform():
    return transforms.Compose([
        transforms.RandomCrop([178, 178]),
        transforms.RandomHorizontalFlip(),
        transforms.Resize([64, 64]),
        transforms.ToTensor(),
    ])


def eval_transform():
    return transforms.Compose([
        transforms.CenterCrop([178, 178]),
        transforms.Resize([64, 64]),
        transforms.ToTensor(),
    ])


def _first(dataset, n, what):
    if n > len(dataset):
        raise ValueError(
            f"asked for the first {n} {what} images, but the {what} split has only "
            f"{len(dataset)}: pass a smaller n_{what}, or make a bigger set with "
            f"`kata data --{what} {n}`")
    return Subset(dataset, torch.arange(n))


def load_splits(root, n_train=16000, n_valid=1000):
    celeba_train_dataset = CelebA(root, split='train', target_type='attr', download=False,
                                  transform=train_transform(), target_transform=get_smile)
    celeba_valid_dataset = CelebA(root, split='valid', target_type='attr', download=False,
                                  transform=eval_transform(), target_transform=get_smile)
    celeba_test_dataset = CelebA(root, split='test', target_type='attr', download=False,
                                 transform=eval_transform(), target_transform=get_smile)

    celeba_train_dataset = _first(celeba_train_dataset, n_train, 'train')
    celeba_valid_dataset = _first(celeba_valid_dataset, n_valid, 'valid')
    return celeba_train_dataset, celeba_valid_dataset, celeba_test_dataset


def make_loaders(train, valid, test, batch_size=32):
    train_dl = DataLoader(train, batch_size, shuffle=True)
    valid_dl = DataLoader(valid, batch_size, shuffle=False)
    test_dl = DataLoader(test, batch_size, shuffle=False)
    return train_dl, valid_dl, test_dl
