"""Checks of kata.data.celeba (imported as kata.celeba): torchvision's CelebA, which also reads the synthetic set.

A small synthetic set is drawn once for the module; the checks that break a
data set work on a copy of it.
"""

import inspect
import json
import shutil
from unittest import mock

import pytest
import torch
import torchvision
from PIL import Image

import kata.celeba
import kata.data.celeba
from kata.celeba import (
    ATTRIBUTE_NAMES,
    MARKER_NAME,
    TEXT_FILES,
    CelebA,
    DatasetChecksumError,
    DatasetNotFoundError,
    is_synthetic,
    read_marker,
)
from kata.data.layout import PARTIAL_NAME
from kata.data.synth import generate

SIZES = {"train": 40, "valid": 12, "test": 12, "all": 64}
TARGET_TYPES = ["attr", "identity", "bbox", "landmarks"]
BOOK_NAMES = (
    "5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs Big_Lips Big_Nose Black_Hair "
    "Blond_Hair Blurry Brown_Hair Bushy_Eyebrows Chubby Double_Chin Eyeglasses Goatee Gray_Hair Heavy_Makeup "
    "High_Cheekbones Male Mouth_Slightly_Open Mustache Narrow_Eyes No_Beard Oval_Face Pale_Skin Pointy_Nose "
    "Receding_Hairline Rosy_Cheeks Sideburns Smiling Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat "
    "Wearing_Lipstick Wearing_Necklace Wearing_Necktie Young").split()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """The folder that holds celeba/ (a small synthetic set)."""
    root = tmp_path_factory.mktemp("celeba_root")
    generate(root, n_train=40, n_valid=12, n_test=12, seed=3, workers=1, progress=False)
    return root


@pytest.fixture
def copy(root, tmp_path):
    """A copy of the small set, free to break."""
    shutil.copytree(root / "celeba", tmp_path / "celeba")
    return tmp_path


def unpatched_integrity():
    """torchvision's own CelebA._check_integrity (kata must not replace it)."""
    return torchvision.datasets.celeba.CelebA.__dict__["_check_integrity"]


# --- the names and the class ----------------------------------------------------------


def test_attribute_names_are_celebas():
    assert list(ATTRIBUTE_NAMES) == BOOK_NAMES, "ATTRIBUTE_NAMES must be CelebA's 40 names in the file's order"
    assert ATTRIBUTE_NAMES[31] == "Smiling" and ATTRIBUTE_NAMES[18] == "Heavy_Makeup", (
        f"index 31 is {ATTRIBUTE_NAMES[31]}, index 18 {ATTRIBUTE_NAMES[18]}: should be Smiling and Heavy_Makeup")


def test_kata_celeba_is_the_loaders_import_path():
    assert kata.celeba.CelebA is kata.data.celeba.CelebA, "kata.celeba.CelebA should be kata.data.celeba.CelebA"
    assert sorted(kata.celeba.__all__) == sorted(kata.data.celeba.__all__), (
        "kata.celeba should re-export every public name of kata.data.celeba, and only those")
    for name in kata.celeba.__all__:
        assert getattr(kata.celeba, name) is getattr(kata.data.celeba, name), f"kata.celeba.{name} differs"


def test_celeba_is_torchvisions_with_the_same_signature():
    assert issubclass(CelebA, torchvision.datasets.CelebA), "kata.celeba.CelebA must subclass torchvision's"
    ours = [(p.name, p.default, p.kind) for p in inspect.signature(CelebA.__init__).parameters.values()]
    theirs = [(p.name, p.default, p.kind)
              for p in inspect.signature(torchvision.datasets.CelebA.__init__).parameters.values()]
    assert ours == theirs, f"CelebA's arguments {ours} differ from torchvision's {theirs}"
    for name in ("__getitem__", "__len__", "_load_csv"):
        assert name not in CelebA.__dict__, f"CelebA re-implements {name}; it should reuse torchvision's code"


def test_torchvision_is_not_patched():
    assert torchvision.datasets.CelebA._check_integrity is unpatched_integrity(), (
        "importing kata.celeba replaced torchvision.datasets.CelebA._check_integrity; override it in the "
        "subclass instead")
    assert unpatched_integrity().__module__ == "torchvision.datasets.celeba"


# --- loading the synthetic set -----------------------------------------------------------


@pytest.mark.parametrize("split", list(SIZES))
def test_every_split_loads_with_every_target_type(root, split):
    ds = CelebA(root, split=split, target_type=TARGET_TYPES)
    assert len(ds) == SIZES[split], f"split {split!r} has {len(ds)} images, expected {SIZES[split]}"
    image, (attr, identity, bbox, landmarks) = ds[0]
    assert isinstance(image, Image.Image) and image.size == (178, 218), f"{split}[0] is not a 178x218 image"
    assert attr.shape == (40,) and set(attr.tolist()) <= {0, 1}, f"{split}[0] attr is {attr}: 40 zeros and ones"
    assert identity.ndim == 0 and int(identity) > 0, f"{split}[0] identity is {identity}"
    assert bbox.shape == (4,) and landmarks.shape == (10,), f"{split}[0] bbox {bbox}, landmarks {landmarks}"
    for target_type in TARGET_TYPES:
        _, target = CelebA(root, split=split, target_type=target_type)[0]
        assert isinstance(target, torch.Tensor), f"target_type={target_type!r} gave {type(target).__name__}"


def test_torchvision_parses_the_folder_identically(root):
    with mock.patch.object(torchvision.datasets.CelebA, "_check_integrity", return_value=True):
        for split in SIZES:
            theirs = torchvision.datasets.CelebA(root, split=split, target_type=TARGET_TYPES)
            ours = CelebA(root, split=split, target_type=TARGET_TYPES)
            assert ours.filename == theirs.filename, f"split {split!r}: the file names differ from torchvision's"
            assert ours.attr_names == theirs.attr_names, f"split {split!r}: the attribute names differ"
            for field in ("attr", "identity", "bbox", "landmarks_align"):
                assert torch.equal(getattr(ours, field), getattr(theirs, field)), (
                    f"split {split!r}: {field} differs from what torchvision parses")
    assert ours.attr_names[:40] == BOOK_NAMES, "attr_names should be CelebA's names"


def test_unpatched_torchvision_rejects_the_synthetic_set(root):
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        torchvision.datasets.CelebA(root)


def test_labels_are_the_attribute_file(root):
    ds = CelebA(root, split="all")
    rows = (root / "celeba" / "list_attr_celeba.txt").read_text().splitlines()[2:]
    expected = torch.tensor([[int(v == "1") for v in row.split()[1:]] for row in rows])
    assert torch.equal(ds.attr, expected), "CelebA's attr does not match list_attr_celeba.txt (mapped -1 -> 0)"


def test_download_true_on_a_present_set_downloads_nothing(root):
    with mock.patch("torchvision.datasets.celeba.download_file_from_google_drive") as fetch:
        ds = CelebA(root, split="valid", download=True)
    assert len(ds) == 12 and not fetch.called, "download=True on a complete set should load it, not download"


def test_download_errors_come_from_torchvision(tmp_path):
    with mock.patch("torchvision.datasets.celeba.download_file_from_google_drive",
                    side_effect=RuntimeError("Google Drive quota exceeded")):
        with pytest.raises(RuntimeError, match="quota exceeded"):
            CelebA(tmp_path, download=True)


def test_marker_helpers(root, tmp_path):
    marker = read_marker(root)
    assert isinstance(marker, dict) and marker["generator"] == "kata.synth", f"read_marker gave {marker!r}"
    assert is_synthetic(root), "is_synthetic(root) is False for a set drawn by `kata data`"
    assert read_marker(tmp_path) is None and not is_synthetic(tmp_path), "an empty folder is not a synthetic set"
    (tmp_path / "celeba").mkdir()
    (tmp_path / "celeba" / MARKER_NAME).write_text("{not json")
    assert read_marker(tmp_path) is None, "a marker that is not JSON should read as None"


# --- what is missing, and where --------------------------------------------------------


def test_no_dataset_says_where_and_how_to_get_one(tmp_path):
    with pytest.raises(RuntimeError) as info:
        CelebA(tmp_path)
    message = str(info.value)
    assert isinstance(info.value, DatasetNotFoundError), f"expected DatasetNotFoundError, got {info.value!r}"
    assert str(tmp_path / "celeba") in message, f"the message should name the folder it looked in: {message}"
    assert f"kata data --root {tmp_path}" in message, f"the message should say how to draw a set: {message}"
    for name in (*TEXT_FILES, "img_align_celeba"):
        assert name in message, f"the message should list {name} among what real CelebA needs: {message}"


@pytest.mark.parametrize("name", TEXT_FILES)
def test_a_missing_text_file_is_named(copy, name):
    (copy / "celeba" / name).unlink()
    with pytest.raises(DatasetNotFoundError) as info:
        CelebA(copy)
    message = str(info.value)
    assert f"missing {name}" in message, f"with {name} deleted, the message should name it: {message}"
    assert "kata data" in message, f"the message should say how to get data: {message}"
    assert is_synthetic(copy), "(the copy still carries the marker: the marker never excuses a missing file)"


def test_a_missing_image_folder_is_named(copy):
    shutil.rmtree(copy / "celeba" / "img_align_celeba")
    with pytest.raises(DatasetNotFoundError) as info:
        CelebA(copy)
    assert "img_align_celeba" in str(info.value) and "kata data" in str(info.value), (
        f"with img_align_celeba/ deleted, the message should name it: {info.value}")


def test_an_image_folder_that_is_a_file_is_refused(copy):
    shutil.rmtree(copy / "celeba" / "img_align_celeba")
    (copy / "celeba" / "img_align_celeba").write_text("not a folder")
    with pytest.raises(DatasetNotFoundError, match="img_align_celeba"):
        CelebA(copy)


def test_without_the_marker_the_md5_check_applies(copy):
    (copy / "celeba" / MARKER_NAME).unlink()
    with pytest.raises(DatasetChecksumError) as info:
        CelebA(copy)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError), "the checksum error must be a RuntimeError, as torchvision's"
    assert "list_attr_celeba.txt" in message and "MD5" in message, (
        f"the message should name the file that fails its checksum: {message}")
    assert "corrupted or is not the official" in message, f"the message should say what a failed MD5 means: {message}"


def test_real_celeba_is_checked_by_torchvision(copy):
    (copy / "celeba" / MARKER_NAME).unlink()
    with mock.patch.object(torchvision.datasets.CelebA, "_check_integrity", return_value=True) as check:
        assert len(CelebA(copy, split="test")) == 12
    assert check.called, "without the marker, CelebA should use torchvision's own integrity check"


def test_an_unfinished_synthetic_set_says_to_rerun_kata_data(copy):
    marker = copy / "celeba" / MARKER_NAME
    (copy / "celeba" / PARTIAL_NAME).write_text(json.dumps(json.loads(marker.read_text())))
    marker.unlink()
    with pytest.raises(DatasetNotFoundError) as info:
        CelebA(copy)
    assert "unfinished" in str(info.value) and "kata data" in str(info.value), (
        f"an interrupted drawing should be reported as unfinished, with the command to finish it: {info.value}")


def test_other_errors_pass_through(root):
    with pytest.raises(ValueError):
        CelebA(root, split="training")  # torchvision's own check of `split`
    assert kata.celeba.CelebAError.__mro__[1] is RuntimeError
