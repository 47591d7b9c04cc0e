"""CelebA, loaded exactly as torchvision loads it, and the kata's synthetic CelebA too.

    from kata.celeba import CelebA     # the exercises' import path (kata/celeba.py re-exports this module)
    train = CelebA("data", split="train", target_type="attr", transform=...)

`CelebA` is torchvision.datasets.CelebA with one change. torchvision checks the
MD5 sums of CelebA's five text files, so it rejects the synthetic set that
`kata data` draws (see kata.data.synth). Here, a folder `ROOT/celeba/` that
carries the marker file KATA_SYNTHETIC.json skips that MD5 check, and only
that: every file must still be there. The real CelebA is checked exactly as
torchvision checks it. When data is missing or wrong, the error (a
RuntimeError, as torchvision's) says what is missing where, and how to get it.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import torchvision
from torchvision.datasets.utils import calculate_md5

from kata.data.layout import ATTRIBUTE_NAMES, IMAGE_FOLDER, MARKER_NAME, PARTIAL_NAME, SMILING, TEXT_FILES
from kata.i18n import say

__all__ = [
    "ATTRIBUTE_NAMES", "SMILING", "MARKER_NAME", "TEXT_FILES", "CelebA", "CelebAError",
    "DatasetNotFoundError", "DatasetChecksumError", "is_synthetic", "read_marker",
]


class CelebAError(RuntimeError):
    """CelebA cannot be loaded (a RuntimeError, like torchvision's own error)."""


class DatasetNotFoundError(CelebAError):
    """The folder, the images or one of the text files is missing."""


class DatasetChecksumError(CelebAError):
    """A text file of a real-looking CelebA fails its MD5 check."""


def read_marker(root) -> dict | None:
    """The synthetic set's marker (ROOT/celeba/KATA_SYNTHETIC.json) as a dict; None if there is none.

    `root` is the folder that holds `celeba/`, as for CelebA(root).
    """
    path = Path(root).expanduser() / "celeba" / MARKER_NAME
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_synthetic(root) -> bool:
    """True if ROOT/celeba/ is a complete synthetic set drawn by `kata data` (it carries the marker)."""
    return read_marker(root) is not None


def _how_to_get_data(root) -> str:
    folder = Path(root).expanduser() / "celeba"
    files = "\n".join(f"        {folder / name}" for name in TEXT_FILES)
    return "\n" + say(
        "To get data:\n"
        "  * the kata's synthetic CelebA (no download; half a minute):\n"
        "        kata data --root {root}\n"
        "  * the real CelebA (img_align_celeba.zip and the five text files, from\n"
        "    https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html), laid out as:\n"
        "        {images}/   (the unzipped 000001.jpg ... 202599.jpg)\n"
        "{files}\n"
        "    (download=True fetches it with gdown, but Google Drive's quota often refuses.)",
        root=shlex.quote(str(root)), images=folder / IMAGE_FOLDER, files=files)


def _diagnose(root, file_list) -> CelebAError | None:
    """What is wrong with ROOT/celeba, as an error to raise; None if nothing is."""
    folder = Path(root).expanduser() / "celeba"
    if not folder.is_dir():
        if folder.exists():
            problem = say("No CelebA under {root}: {folder} is a file, not a folder.", root=root, folder=folder)
        else:
            problem = say("No CelebA under {root}: {folder} does not exist.", root=root, folder=folder)
        return DatasetNotFoundError(problem + _how_to_get_data(root))
    synthetic = is_synthetic(root)
    if not synthetic and (folder / PARTIAL_NAME).exists():
        return DatasetNotFoundError(say(
            "{folder} holds an unfinished synthetic CelebA (its drawing was interrupted: there is {partial} but "
            "no {marker}). Run `kata data --root {root}` again to finish it.",
            folder=folder, partial=PARTIAL_NAME, marker=MARKER_NAME, root=shlex.quote(str(root))))
    missing = [] if (folder / IMAGE_FOLDER).is_dir() else [say("the image folder {folder}/", folder=IMAGE_FOLDER)]
    missing += [name for _, _, name in file_list
                if not name.endswith((".zip", ".7z")) and not (folder / name).is_file()]
    if missing:
        incomplete = (say("The synthetic CelebA under {folder} is incomplete: missing {missing}.", folder=folder,
                          missing=", ".join(missing)) if synthetic else
                      say("The CelebA under {folder} is incomplete: missing {missing}.", folder=folder,
                          missing=", ".join(missing)))
        return DatasetNotFoundError(incomplete + _how_to_get_data(root))
    if synthetic:
        return None
    for _url, md5, name in file_list:
        if name.endswith((".zip", ".7z")):
            continue
        actual = calculate_md5(folder / name)
        if actual != md5:
            return DatasetChecksumError(say(
                "{file} fails its MD5 checksum (expected {expected}, got {actual}): the file is corrupted or is "
                "not the official CelebA file. Download it again.\n"
                "(A synthetic set drawn by `kata data` carries {marker}, which skips this check; {folder} has "
                "none. To redraw one elsewhere: kata data --root OTHER_ROOT)",
                file=folder / name, expected=md5, actual=actual, marker=MARKER_NAME, folder=folder))
    return None


class CelebA(torchvision.datasets.CelebA):
    """torchvision.datasets.CelebA that also accepts the kata's synthetic CelebA.

    Same arguments, same parsing, same items. Real CelebA is checked as
    torchvision checks it (MD5 sums included). A folder ROOT/celeba/ that
    carries KATA_SYNTHETIC.json skips only the MD5 sums: all files must exist.
    """

    def __init__(self, root, split="train", target_type="attr", transform=None, target_transform=None,
                 download=False) -> None:
        try:
            super().__init__(root, split=split, target_type=target_type, transform=transform,
                             target_transform=target_transform, download=download)
        except RuntimeError as err:
            if isinstance(err, CelebAError) or (download and not getattr(self, "_downloaded", False)):
                raise  # ours already, or the download itself failed: torchvision's error says why
            problem = _diagnose(getattr(self, "root", root), self.file_list)
            if problem is None:
                raise  # the data is fine: some other trouble, which torchvision's message explains
            raise problem from None

    def _check_integrity(self) -> bool:
        if not is_synthetic(self.root):
            return super()._check_integrity()
        # The synthetic set: every file must exist, only the MD5 sums are skipped.
        folder = os.path.join(self.root, self.base_folder)
        return os.path.isdir(os.path.join(folder, IMAGE_FOLDER)) and all(
            os.path.isfile(os.path.join(folder, name))
            for _, _, name in self.file_list if not name.endswith((".zip", ".7z")))

    def download(self) -> None:
        super().download()
        self._downloaded = True
