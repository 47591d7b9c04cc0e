"""Data without a download: ``torchvision.datasets.CelebA`` reads the CelebA the run names, and no
dataset downloads.

Under ``kata run``, ``torchvision.datasets.CelebA(root, ...)`` reads ``--celeba DIR`` (a folder
holding ``celeba/``: the real set, or one ``kata data`` drew), else the kata's synthetic CelebA
(drawn on first use, as ``kata train`` draws it), whatever ``root`` the script names, through
:class:`kata.celeba.CelebA`.  A synthetic set smaller than the indices a script asks for (the
book's ``Subset(train, torch.arange(16000))``) reads image ``i % len`` past its end, and the run
says so once.  A download (``download=True``, or any dataset's ``download_url``) stops with one
line saying what to pass instead, and so do pretrained weights that ``torch.hub`` would download
(``resnet18(weights=...)``): the line names the file its cache reads first.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kata.i18n import N_, say

__all__ = ["DownloadRefused", "SYNTHETIC", "refuse_hub_downloads", "serve_celeba"]

# The synthetic set a run draws when not given one: kata train's quick sizes (its cache is shared).
SYNTHETIC = dict(n_train=2000, n_valid=500, n_test=500)

NO_DOWNLOAD = N_("{what} tried to download {url}: `kata run` downloads nothing. Put the data where the script "
                 "reads it (download=False), or for CelebA pass --celeba DIR (a folder holding celeba/) or leave it "
                 "out for the kata's synthetic CelebA")
NO_WEIGHTS = N_("torch.hub tried to download {url}: `kata run` downloads nothing. Put that file at {path} (torch.hub's "
                "cache, which it reads first), or load no pretrained weights")
WRAPPED = N_("kata run: the synthetic CelebA under {folder} has {count} {split} images; the script asked for image "
             "{index}, so images past the end read image i % {count} (a run on the real CelebA reads each once)")
DRAWING = N_("kata run: drawing the kata's synthetic CelebA into {folder} for torchvision.datasets.CelebA "
             "(once; --celeba DIR reads another)")


class DownloadRefused(RuntimeError):
    """A dataset tried to download: the message says what to pass instead, in one line."""


def _root(celeba: str | None) -> Path:
    if celeba:
        return Path(celeba)
    from kata.data.layout import default_root
    from kata.data.synth import generate

    root = default_root() / "synthetic-{n_train}-{n_valid}-{n_test}-seed0".format(**SYNTHETIC)
    if not (root / "celeba").is_dir():
        print(say(DRAWING, folder=root), file=sys.stderr)
    generate(root, **SYNTHETIC, seed=0, progress=False)
    return root


def serve_celeba(celeba: str | None) -> None:
    """After torchvision is imported: its CelebA reads the run's CelebA, and nothing downloads."""
    import torchvision
    import torchvision.datasets.utils as utils

    from kata.data.celeba import CelebA, is_synthetic

    told = set()

    class RunCelebA(CelebA):
        __doc__ = CelebA.__doc__

        def __init__(self, root, split="train", target_type="attr", transform=None, target_transform=None,
                     download=False):
            if download:
                raise DownloadRefused(say(NO_DOWNLOAD, what="torchvision.datasets.CelebA", url="CelebA"))
            self._kata_root = _root(celeba)
            self._kata_synthetic = is_synthetic(self._kata_root)
            super().__init__(str(self._kata_root), split=split, target_type=target_type, transform=transform,
                             target_transform=target_transform, download=False)
            self._kata_split = split

        def __getitem__(self, index):
            count = len(self)
            if self._kata_synthetic and count and index >= count:
                if self._kata_split not in told:
                    told.add(self._kata_split)
                    print(say(WRAPPED, folder=self._kata_root, count=count, split=self._kata_split,
                              index=int(index)), file=sys.stderr)
                index = int(index) % count
            return super().__getitem__(index)

    RunCelebA.__name__ = RunCelebA.__qualname__ = "CelebA"
    torchvision.datasets.CelebA = RunCelebA
    sys.modules["torchvision.datasets"].CelebA = RunCelebA
    original = utils.download_url

    def download_url(url, *args, **kwargs):
        raise DownloadRefused(say(NO_DOWNLOAD, what="torchvision.datasets", url=url))

    download_url.__wrapped__ = original
    utils.download_url = download_url
    utils.download_file_from_google_drive = download_url


def refuse_hub_downloads() -> None:
    """After torch is imported: what ``torch.hub`` would download (pretrained weights, a hub model) stops with one
    line naming the file its cache reads instead."""
    import torch.hub

    original = torch.hub.download_url_to_file

    def download_url_to_file(url, dst, *args, **kwargs):
        raise DownloadRefused(say(NO_WEIGHTS, url=url, path=dst))

    download_url_to_file.__wrapped__ = original
    torch.hub.download_url_to_file = download_url_to_file
