"""CelebA's on-disk layout, in one place: file names, attribute names, image size, splits.

torchvision.datasets.CelebA(root) reads this layout; `kata data` writes it:

    ROOT/celeba/img_align_celeba/000001.jpg ...   178 x 218 RGB JPEGs
    ROOT/celeba/list_attr_celeba.txt              the 40 attributes, +1 / -1
    ROOT/celeba/list_eval_partition.txt           0 train, 1 valid, 2 test
    ROOT/celeba/identity_CelebA.txt               which person each face is
    ROOT/celeba/list_bbox_celeba.txt              the face's bounding box
    ROOT/celeba/list_landmarks_align_celeba.txt   eyes, nose, mouth corners
    ROOT/celeba/KATA_SYNTHETIC.json               a synthetic set only: "drawn by kata", written last

This module imports nothing but the standard library, so that the generator
(which must not import torch) and the loader (which does) can share it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "ATTRIBUTE_NAMES", "SMILING", "IMAGE_FOLDER", "TEXT_FILES", "MARKER_NAME", "PARTIAL_NAME",
    "WIDTH", "HEIGHT", "SPLITS", "default_root",
]

MARKER_NAME = "KATA_SYNTHETIC.json"  # in ROOT/celeba/, written last: "this set is complete"
PARTIAL_NAME = "KATA_SYNTHETIC.partial.json"  # in ROOT/celeba/ while a set is being written

WIDTH, HEIGHT = 178, 218  # CelebA's aligned and cropped faces
IMAGE_FOLDER = "img_align_celeba"
TEXT_FILES = (
    "list_attr_celeba.txt",
    "identity_CelebA.txt",
    "list_bbox_celeba.txt",
    "list_landmarks_align_celeba.txt",
    "list_eval_partition.txt",
)

# The 40 attributes, in the order of CelebA's list_attr_celeba.txt.
# (The loader, kata.data.celeba, re-exports this tuple; it lives here so `kata data` need not import torch.)
ATTRIBUTE_NAMES = (
    "5_o_Clock_Shadow", "Arched_Eyebrows", "Attractive", "Bags_Under_Eyes", "Bald",
    "Bangs", "Big_Lips", "Big_Nose", "Black_Hair", "Blond_Hair",
    "Blurry", "Brown_Hair", "Bushy_Eyebrows", "Chubby", "Double_Chin",
    "Eyeglasses", "Goatee", "Gray_Hair", "Heavy_Makeup", "High_Cheekbones",
    "Male", "Mouth_Slightly_Open", "Mustache", "Narrow_Eyes", "No_Beard",
    "Oval_Face", "Pale_Skin", "Pointy_Nose", "Receding_Hairline", "Rosy_Cheeks",
    "Sideburns", "Smiling", "Straight_Hair", "Wavy_Hair", "Wearing_Earrings",
    "Wearing_Hat", "Wearing_Lipstick", "Wearing_Necklace", "Wearing_Necktie", "Young",
)
SMILING = ATTRIBUTE_NAMES.index("Smiling")  # 31, the book's label

SPLITS = ("train", "valid", "test")  # list_eval_partition.txt codes 0, 1, 2


def default_root() -> Path:
    """Where datasets go unless told otherwise: $KATA_DATA, else ./data."""
    return Path(os.environ.get("KATA_DATA") or "data")
