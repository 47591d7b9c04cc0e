"""``kata run PATH [ARGS...]``: run a PyTorch script as if this machine had a GPU (kata.asgpu)."""

from __future__ import annotations

import argparse

from kata.commands._args import positive
from kata.i18n import N_, _

__all__ = ["HELP", "add_parser", "run"]

HELP = N_("run any PyTorch script as if this machine had a GPU (the simulated one), and see what a GPU would say")


def add_parser(sub):
    p = sub.add_parser("run", help=_(HELP),
                       description=_("Run a Python script as `python PATH ARGS` would, on a machine that has one CUDA "
                                     "GPU: the kata's simulated accelerator. A GPU-only failure (a GPU tensor handed "
                                     "to NumPy or matplotlib, two devices in one operation) stops with PyTorch's own "
                                     "message in CUDA's words, the script's line and the kata's lesson; at the end it "
                                     "says where the host waited for the GPU, by line. The exit status is the "
                                     "script's (1 for a failure), so it serves in CI."))
    p.add_argument("--quick", type=positive, metavar="N",
                   help=_("every DataLoader yields at most N batches, and matplotlib draws into files instead of "
                          "windows (plt.show and plt.pause save the figures)"))
    p.add_argument("--celeba", metavar="DIR",
                   help=_("the folder holding celeba/ that torchvision.datasets.CelebA reads, whatever root the "
                          "script gives (default: the kata's synthetic CelebA, drawn on first use)"))
    p.add_argument("--out", metavar="DIR", help=_("where figures are saved (default: kata-run)"))
    p.add_argument("--no-report", action="store_true", help=_("leave out the report of syncs at the end"))
    p.add_argument("--device", choices=["sim", "cuda"], default="sim",
                   help=_("sim (default): the simulated GPU; cuda: this machine's own GPU, with the same quick mode, "
                          "data and report (its syncs as CUDA's sync debug mode counts them)"))
    p.add_argument("--json", metavar="FILE", help=_("write the run's verdict as data: the exit status, the line that "
                                                    "failed and its error, the syncs, the lines that sync per batch"))
    p.add_argument("path", metavar="PATH", help=_("the Python script, or a notebook (.ipynb): its code cells in order"))
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help=_("the script's own arguments"))
    return p


def run(args) -> int:
    from kata.asgpu import Options, run_script

    return run_script(args.path, args.args, Options(quick=args.quick, celeba=args.celeba, out=args.out,
                                                    report=not args.no_report, device=args.device, json=args.json))
