"""The `kata` command.

    kata list                  the exercises, in order, and how to check them
    kata hint NAME             the hint for one exercise
    kata data [--root DIR]     draw a synthetic CelebA in the real on-disk layout
    kata train [--target T]    train the book's CNN with an implementation, plot as it goes
    kata bench [--target T]    time training epochs: CPU vs GPU, a sync per batch vs one per epoch
    kata grade SUB... --out D  grade a class's submissions (folders or zips), safely, in bulk
    kata gradescope DIR|ZIP    write a Gradescope autograder that grades with `kata grade`
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from pathlib import Path

from kata.target import curriculum

# `kata train` sizes: a quick run (a few minutes on a 2-core CPU), and chapter 14's.
QUICK = dict(n_train=2000, n_valid=500, n_test=500, epochs=6)
BOOK = dict(n_train=16000, n_valid=1000, n_test=1000, epochs=30)


def default_data_root() -> Path:
    """Where datasets go unless --root says otherwise: $KATA_DATA, else ./data."""
    return Path(os.environ.get("KATA_DATA") or "data")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a count of images is 0 or more")
    return value


def _positive(text: str) -> int:
    value = _count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def cmd_list(args: argparse.Namespace) -> int:
    print("device-kata: the exercises, in order (edit exercises/NAME.py, check with `pytest exercises/NAME.py`)\n")
    for number, ex in enumerate(curriculum(), 1):
        print(f"  {number}. {ex['name']:<9} {ex['title']}")
    print("\n`pytest exercises` checks them all; `kata hint NAME` gives a hint.")
    return 0


def cmd_hint(args: argparse.Namespace) -> int:
    by_name = {ex["name"]: (n, ex) for n, ex in enumerate(curriculum(), 1)}
    if args.name not in by_name:
        print(f"kata hint: no exercise {args.name!r}; the exercises are: {', '.join(by_name)}", file=sys.stderr)
        return 2
    number, ex = by_name[args.name]
    print(f"{number}. {ex['name']}: {ex['title']}\n")
    print(textwrap.indent(ex["hint"].strip(), "  "))
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from kata import synth

    root = Path(args.root) if args.root else default_data_root()
    start = time.perf_counter()
    folder = synth.generate(root, n_train=args.train, n_valid=args.valid, n_test=args.test,
                            seed=args.seed, workers=args.workers, progress=True)
    seconds = time.perf_counter() - start
    total = args.train + args.valid + args.test
    print(f"synthetic CelebA: {total:,} images ({args.train:,} train, {args.valid:,} valid, {args.test:,} test, "
          f"seed {args.seed}) in {folder} ({seconds:.1f} s)")
    print(f"load it with kata.celeba.CelebA({str(root)!r}, split='train', ...), or `load_splits({str(root)!r})`")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from kata.train import KataUserError, Settings, run

    preset = BOOK if args.book else QUICK
    chosen = dict(n_train=args.train, n_valid=args.valid, n_test=args.test, epochs=args.epochs)
    settings = Settings(**{k: v if v is not None else preset[k] for k, v in chosen.items()},
                        target=args.target, root=args.root, batch_size=args.batch_size,
                        device=args.device, out=args.out, book=args.book)
    try:
        run(settings)
    except KataUserError as err:
        print(f"kata train: {err}", file=sys.stderr)
        return 1
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from kata import bench

    return bench.main(target=args.target, out=args.out)


def cmd_grade(args: argparse.Namespace) -> int:
    from kata.grade import run_from_args

    return run_from_args(args)


def cmd_gradescope(args: argparse.Namespace) -> int:
    from kata.grade_gradescope import run_from_args

    return run_from_args(args)


def _add_grading_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=_positive, default=300, metavar="SECONDS",
                   help="wall-clock limit for one submission's whole run (default 300)")
    p.add_argument("--test-timeout", type=_positive, default=30, metavar="SECONDS",
                   help="time limit for one check (default 30)")
    p.add_argument("--memory", type=_positive, default=4096, metavar="MB",
                   help="memory ceiling of a submission's test process (default 4096)")
    p.add_argument("--slow", action="store_true",
                   help="also run the checks marked slow (default: the checks `pytest exercises` runs)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kata", description="device-kata: learn where a tensor lives.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("list", help="the exercises, in order")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("hint", help="the hint for one exercise")
    p.add_argument("name", help="an exercise: " + ", ".join(ex["name"] for ex in curriculum()))
    p.set_defaults(func=cmd_hint)

    p = sub.add_parser("data", help="draw a synthetic CelebA (real on-disk layout)",
                       description="Draw a synthetic CelebA under ROOT/celeba/, in the real dataset's layout "
                                   "(img_align_celeba/ and the five .txt files), for when the real one "
                                   "can't be downloaded. Same seed, same files.")
    p.add_argument("--root", help="folder to hold celeba/ (default: $KATA_DATA, else ./data)")
    p.add_argument("--train", type=_count, default=16000, help="training images (default: 16000, as the book uses)")
    p.add_argument("--valid", type=_count, default=1000, help="validation images (default: 1000)")
    p.add_argument("--test", type=_count, default=1000, help="test images (default: 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--workers", type=int, default=None, help="processes drawing images (default: one per core)")
    p.set_defaults(func=cmd_data)

    p = sub.add_parser("train", help="train the book's CNN with an implementation (solutions by default)",
                       description="Train the book's CNN on CelebA with the chosen implementation's data, "
                                   "model, training and plotting modules. Writes history.png (redrawn each "
                                   "epoch) and history.json into --out, and ends with the test accuracy.")
    p.add_argument("--target", default="solutions",
                   help="the implementation: solutions (default), exercises, or a folder of your own")
    p.add_argument("--root", help="folder holding real CelebA in celeba/ (default: a synthetic set, "
                                  "made on first use in $KATA_DATA or ./data)")
    p.add_argument("--book", action="store_true", help="the book's run: 16,000 / 1,000 images, 30 epochs")
    p.add_argument("--train", type=_positive, help=f"training images (default {QUICK['n_train']}; --book 16000)")
    p.add_argument("--valid", type=_positive, help=f"validation images (default {QUICK['n_valid']}; --book 1000)")
    p.add_argument("--test", type=_positive, help=f"synthetic test images (default {QUICK['n_test']}; --book 1000)")
    p.add_argument("--epochs", type=_positive, help=f"epochs (default {QUICK['epochs']}; --book 30)")
    p.add_argument("--batch-size", type=_positive, default=32, help="batch size (default 32, as the book)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                   help="auto (default) picks cuda, then mps, then cpu")
    p.add_argument("--out", help="folder for history.png and history.json (default runs/<timestamp>)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("bench", help="time training epochs on each device and loop style",
                       description="Run the epoch benchmarks (tests/benchmarks) with pytest-benchmark and print "
                                   "device x loop style, median epoch time, images per second and the ratios; "
                                   "write bench.json and bench.png into --out.")
    p.add_argument("--target", default="solutions",
                   help="whose sync.train_epoch is the one-sync loop: solutions (default), exercises, or a folder")
    p.add_argument("--out", help="folder for bench.json and bench.png (default runs/bench-<timestamp>)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("grade", help="grade a class's submissions (folders or zips), safely, in bulk",
                       description="Grade each submission (a folder holding the contract's modules, directly "
                                   "or in exercises/, or a .zip of one) with the pristine checks, one sandboxed "
                                   "process each, and write grades.csv, summary.json, results/NAME.json "
                                   "(Gradescope's format), feedback/NAME.md and logs/NAME.log into --out.")
    p.add_argument("submissions", nargs="*", metavar="SUBMISSION",
                   help="folders or .zip files (none: only check the reference solutions)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the results (its files are replaced)")
    p.add_argument("--jobs", type=_positive, default=None, metavar="N",
                   help="submissions graded at once (default: one per CPU core)")
    _add_grading_limits(p)
    p.add_argument("--reference", metavar="FILE",
                   help="the reference solutions' run, reused while nothing it depends on changed "
                        "(default: DIR/reference.json)")
    p.add_argument("--gradescope-results", metavar="FILE",
                   help="also write the (one) submission's results to FILE (what run_autograder uses)")
    p.add_argument("--no-sandbox", action="store_true",
                   help="no namespaces (network, files, processes); the limits still apply")
    p.add_argument("--keep", action="store_true", help="keep the working folders (for debugging)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("gradescope", help="write a Gradescope autograder (setup.sh, run_autograder) for this kata",
                       description="Write the files of a Gradescope autograder into DIR (or into a .zip ready "
                                   "to upload): setup.sh, run_autograder and the kata's own source. It grades "
                                   "/autograder/submission with `kata grade` and writes "
                                   "/autograder/results/results.json.")
    p.add_argument("dest", metavar="DIR_OR_ZIP", help="a folder, or a file name ending in .zip")
    _add_grading_limits(p)
    p.set_defaults(func=cmd_gradescope)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except (ValueError, RuntimeError, OSError) as err:
        print(f"kata {args.command}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
