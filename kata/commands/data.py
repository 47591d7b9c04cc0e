"""``kata data``: draw a synthetic CelebA in the real on-disk layout."""

from __future__ import annotations

import time
from pathlib import Path

from kata.commands._args import count
from kata.i18n import N_, _, say

__all__ = ["HELP", "add_parser", "run"]

HELP = N_("draw a synthetic CelebA (real on-disk layout)")


def add_parser(sub):
    p = sub.add_parser("data", help=_(HELP),
                       description=_("Draw a synthetic CelebA under ROOT/celeba/, in the real dataset's layout "
                                     "(img_align_celeba/ and the five .txt files), for when the real one "
                                     "can't be downloaded. Same seed, same files."))
    p.add_argument("--root", help=_("folder to hold celeba/ (default: $KATA_DATA, else ./data)"))
    p.add_argument("--train", type=count, default=16000,
                   help=_("training images (default: 16000, as the book uses)"))
    p.add_argument("--valid", type=count, default=1000, help=_("validation images (default: 1000)"))
    p.add_argument("--test", type=count, default=1000, help=_("test images (default: 1000)"))
    p.add_argument("--seed", type=int, default=0, help=_("random seed (default: 0)"))
    p.add_argument("--workers", type=int, default=None, help=_("processes drawing images (default: one per core)"))
    return p


def run(args) -> int:
    from kata.data.layout import default_root
    from kata.data.synth import generate

    root = Path(args.root) if args.root else default_root()
    start = time.perf_counter()
    folder = generate(root, n_train=args.train, n_valid=args.valid, n_test=args.test,
                      seed=args.seed, workers=args.workers, progress=True)
    seconds = time.perf_counter() - start
    total = args.train + args.valid + args.test
    print(say("synthetic CelebA: {total:,} images ({train:,} train, {valid:,} valid, {test:,} test, seed {seed}) "
              "in {folder} ({seconds:.1f} s)", total=total, train=args.train, valid=args.valid, test=args.test,
              seed=args.seed, folder=folder, seconds=seconds))
    print(say("load it with kata.celeba.CelebA({root!r}, split='train', ...), or `load_splits({root!r})`",
              root=str(root)))
    return 0
