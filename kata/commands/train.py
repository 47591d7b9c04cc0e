"""``kata train``: train the book's CNN on CelebA with an implementation, plotting as it goes.

The implementation is a target (kata/harness/target.py): ``solutions`` by default,
``exercises`` or a path for a learner's own. Its ``data``, ``model``, ``training``
and ``plotting`` modules do the work, exactly as the book's notebook would:

    train, valid, test = data.load_splits(root, n_train, n_valid)
    train_dl, valid_dl, test_dl = data.make_loaders(train, valid, test, batch_size)
    torch.manual_seed(1); model = model.build_model()
    history = training.train(model, epochs, train_dl, valid_dl, device, on_epoch=...)
    training.evaluate(model, test_dl, device)

This module adds what a person running it wants around that: data (a cached
synthetic CelebA unless --root names a real one), a progress bar per epoch,
a live ``history.png`` (the target's LivePlot) and ``history.json`` written after
every epoch, the test accuracy at the end, and a clear message instead of a
traceback when the learner's code is not written yet or breaks.

On an accelerator (a GPU, or ``--device sim``: the simulated one, kata.sim) it
also draws the history each epoch as the book's notebook does, from the raw
lists (``ax.plot(x_arr, hist[2], '-o')``): a history of device tensors then
crashes with PyTorch's "can't convert cuda:0 device type tensor to numpy" (on a
laptop, "simgpu:0"), the seed's error, and ``kata train`` says where the tensors
were put into the history and what the fix is. (The learner's own LivePlot may
convert entries, as a correct one does, so it alone would not show the seed's
crash.) On the CPU the histories are converted for history.json, and a note
after the run says what they held and why it matters.

torch is imported inside the functions, so ``kata --help`` stays light.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from kata.checks import lessons
from kata.checks.lessons import say as say_
from kata.commands._args import positive
from kata.commands._checkpoints import CHECKPOINT, Checkpoints, ResumeError, checkpoint_file, earlier_run
from kata.commands._histories import HistoryWatch, SeedsCrash, book_plot, plain
from kata.commands._progress import ProgressLoader
from kata.files import write_json
from kata.harness.target import Target, TargetError, target_path
from kata.harness.tracebacks import display, learner_error
from kata.i18n import N_, _, language, say
from kata.records.history import HISTORY_NAMES

__all__ = ["BOOK", "HELP", "QUICK", "RANK_MODULES", "HistoryWatch", "KataUserError", "ProgressLoader", "Settings",
           "add_parser", "book_plot", "closing", "data_root", "epoch_line", "heading", "learner_code", "live_plot",
           "pick_device", "plain", "run", "run_folder", "settings_of", "train", "train_on_ranks"]

HELP = N_("train the book's CNN with an implementation (solutions by default)")

# `kata train` sizes: a quick run (about a minute on a 2-core CPU), and chapter 14's.
QUICK = dict(n_train=2000, n_valid=500, n_test=500, epochs=6)
BOOK = dict(n_train=16000, n_valid=1000, n_test=1000, epochs=30)


def add_parser(sub):
    p = sub.add_parser("train", help=_(HELP),
                       description=_("Train the book's CNN on CelebA with the chosen implementation's data, "
                                     "model, training, plotting and checkpoint modules. Writes history.png (redrawn "
                                     "each epoch), history.json and checkpoint.pt into --out, and ends with the test "
                                     "accuracy. --resume goes on from a checkpoint.pt, on any device."))
    p.add_argument("--target", help=_("the implementation: solutions (default), exercises, or a folder of your own"))
    p.add_argument("--root", help=_("folder holding real CelebA in celeba/ (default: a synthetic set, "
                                    "made on first use in $KATA_DATA or ./data)"))
    p.add_argument("--book", action="store_true", help=_("the book's run: 16,000 / 1,000 images, 30 epochs"))
    p.add_argument("--train", type=positive,
                   help=say("training images (default {n}; --book 16000)", n=QUICK["n_train"]))
    p.add_argument("--valid", type=positive,
                   help=say("validation images (default {n}; --book 1000)", n=QUICK["n_valid"]))
    p.add_argument("--test", type=positive,
                   help=say("synthetic test images (default {n}; --book 1000)", n=QUICK["n_test"]))
    p.add_argument("--epochs", type=positive, help=say("epochs (default {n}; --book 30)", n=QUICK["epochs"]))
    p.add_argument("--batch-size", type=positive, help=_("batch size (default 32, as the book)"))
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps", "sim"],
                   help=_("auto (default) picks cuda, then mps, then cpu; sim is the simulated accelerator "
                          "(kata.sim): a GPU's device rules on any machine, so the seed's crash happens here too"))
    p.add_argument("--out", help=_("folder for history.png, history.json and checkpoint.pt (default "
                                   "runs/<timestamp>; with --resume, the checkpoint's folder)"))
    p.add_argument("--nproc", type=positive, metavar="N",
                   help=_("train on N processes under torchrun (PyTorch's launcher) with the implementation's "
                          "distributed module: DistributedDataParallel, each process a share of the images, one "
                          "progress bar; on the CPU (gloo), or on N GPUs (nccl) where there are N"))
    p.add_argument("--resume", metavar="PATH",
                   help=_("go on from a checkpoint.pt (or the run folder holding it), with that run's settings and "
                          "target unless given again, on --device (any), up to --epochs in all (default: the "
                          "run's)"))
    return p


def settings_of(args) -> Settings:
    """The command line's settings; with --resume, what it does not give is the earlier run's."""
    resume, earlier = None, {}
    if args.resume:
        try:
            resume = checkpoint_file(args.resume)
        except ResumeError as err:
            raise KataUserError(str(err)) from None
        earlier = earlier_run(resume).get("settings", {})
    book = args.book or bool(earlier.get("book"))
    preset = {**(BOOK if book else QUICK), "target": "solutions", "batch_size": 32, "root": None}

    def pick(name, given):   # the command line's, else the earlier run's, else the default
        if given is not None:
            return given
        return earlier[name] if earlier.get(name) is not None else preset[name]

    return Settings(n_train=pick("n_train", args.train), n_valid=pick("n_valid", args.valid),
                    n_test=pick("n_test", args.test), epochs=pick("epochs", args.epochs),
                    target=pick("target", args.target), root=pick("root", args.root),
                    batch_size=pick("batch_size", args.batch_size), device=args.device,
                    out=args.out or (str(resume.parent) if resume else None), book=book,
                    data_seed=earlier.get("data_seed", 0), resume=str(resume) if resume else None,
                    nproc=args.nproc)


def run(args) -> int:
    try:
        train(settings_of(args))
    except KataUserError as err:
        print(f"kata train: {err}", file=sys.stderr)
        return 1
    return 0

class KataUserError(Exception):
    """Something the person running `kata train` can fix; the message says how."""


@dataclass
class Settings:
    """What `kata train` runs (:func:`run` fills it from the command line)."""

    n_train: int
    n_valid: int
    n_test: int                      # synthetic set only; a real test split is used whole
    epochs: int
    target: str = "solutions"
    root: str | None = None          # real (or any) CelebA; None = the cached synthetic set
    batch_size: int = 32
    device: str = "auto"
    out: str | None = None
    data_seed: int = 0
    book: bool = False
    resume: str | None = None        # a checkpoint.pt to go on from
    nproc: int | None = None         # --nproc: that many ranks under torchrun, with the distributed exercise


def pick_device(choice: str):
    """'auto' is what the devices exercise's pick_device does: cuda, then mps, then cpu."""
    import torch

    if choice == "auto":
        return torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")
    if choice == "sim":
        from kata import sim

        ok, why = sim.support()
        if not ok:
            raise KataUserError(f"--device sim: {why}")
        try:
            return sim.install()
        except RuntimeError as err:  # after a backward pass in this process, say
            raise KataUserError(f"--device sim: {err}") from None
    device = torch.device(choice)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise KataUserError(_("--device cuda: no CUDA device is available here (try --device auto)"))
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise KataUserError(_("--device mps: MPS is not available here (try --device auto)"))
    return device


def data_root(settings: Settings, quiet: bool = False) -> tuple[Path, bool]:
    """The folder holding celeba/, and whether it is the synthetic set."""
    if settings.root:
        root = Path(settings.root)
        if not (root / "celeba").is_dir():
            raise KataUserError(say(
                "--root {root}: there is no celeba/ folder in it. Put real CelebA under {root}/celeba/ "
                "(see docs/data.md), or leave out --root to use a synthetic set", root=root))
        return root, False
    from kata.data.layout import default_root
    from kata.data.synth import generate

    s = settings
    root = default_root() / f"synthetic-{s.n_train}-{s.n_valid}-{s.n_test}-seed{s.data_seed}"
    generate(root, n_train=s.n_train, n_valid=s.n_valid, n_test=s.n_test, seed=s.data_seed,
                   progress=not quiet)
    return root, True


def train(settings: Settings, quiet: bool = False) -> dict:
    """Train, evaluate and write the run's files; return what history.json holds."""
    if settings.nproc:
        return train_on_ranks(settings, quiet)
    import torch

    start = time.perf_counter()
    tell = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    target = Target(target_path(settings.target))
    modules = {name: target.module(name) for name in ("data", "model", "training", "plotting")}
    try:
        resume = checkpoint_file(settings.resume) if settings.resume else None
    except ResumeError as err:
        raise KataUserError(str(err)) from None
    out = run_folder(settings)
    device = pick_device(settings.device)

    root, synthetic = data_root(settings, quiet)
    data, model_mod, training, plotting = (modules[n] for n in ("data", "model", "training", "plotting"))
    with learner_code(target):
        train_ds, valid_ds, test_ds = data.load_splits(root, n_train=settings.n_train, n_valid=settings.n_valid)
        train_dl, valid_dl, test_dl = data.make_loaders(train_ds, valid_ds, test_ds, batch_size=settings.batch_size)
        torch.manual_seed(1)
        model = model_mod.build_model()
    checkpoints = Checkpoints(target, "checkpoint", out, device, resume, tell)
    try:
        with learner_code(target):
            done, earlier = checkpoints.start(model)
    except ResumeError as err:
        raise KataUserError(str(err)) from None
    remaining = settings.epochs - done
    if remaining < 1:
        raise KataUserError(say_(lessons.RESUME_DONE, path=display(resume), done=done, more=done + QUICK["epochs"]))

    tell(heading(target, settings, (train_ds, valid_ds, test_ds), root, synthetic, device))
    if not settings.book:
        tell(_("  (a quick run; `kata train --book` runs the book's 16,000 / 1,000 images for 30 epochs)"))
    if resume is not None:
        tell(say_(lessons.RESUMED, path=display(resume), done=done, epochs=settings.epochs))
    live = live_plot(plotting, out / "history.png", target, device, tell)

    record = {
        # solutions and exercises by name, so a run folder taken to another machine resumes with its copy
        "settings": {**asdict(settings), "target": settings.target if settings.target in ("solutions", "exercises")
                     else str(target.path)},
        "target": str(target.path),
        "data": {"root": str(root.resolve()), "synthetic": synthetic,
                 "n_train": len(train_ds), "n_valid": len(valid_ds), "n_test": len(test_ds)},
        "device": str(device),
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
        "history": {},
        "epoch_seconds": earlier_run(resume).get("epoch_seconds", [])[:done] if resume else [],
        "test": None,
    }
    if resume is not None:
        record["resumed"] = [*earlier_run(resume).get("resumed", []),
                             {"from": str(resume.resolve()), "epochs_done": done, "device": str(device)}]
    watch = HistoryWatch(target, "training")
    epoch_start = [time.perf_counter()]

    def on_epoch(epoch, history):
        calls.append(epoch)
        now = time.perf_counter()
        record["epoch_seconds"].append(round(now - epoch_start[0], 3))
        epoch_start[0] = now
        watch.look(history, sys._getframe(1))
        full = tuple([*before, *h] for before, h in zip(earlier, history, strict=False))   # the run's, from its start
        if device.type != "cpu":  # the seed's plot, from the raw history: its crash, explained
            try:
                watch.plot_as_the_book_does(full)
            except SeedsCrash as crash:
                raise KataUserError(str(crash)) from None
        record["history"] = {n: [plain(v) for v in h] for n, h in zip(HISTORY_NAMES, full, strict=False)}
        with learner_code(target):
            if live is not None:
                live.update(done + epoch, full)
            else:
                book_plot(full).savefig(out / "history.png")
        write_json(out / "history.json", record)
        with learner_code(target):
            checkpoints.save(model, done + epoch + 1, full)
        tell(epoch_line(record, done + epoch + 1, settings.epochs))

    calls: list[int] = []
    progress = ProgressLoader(train_dl, settings.epochs, done)
    hook = progress.attach(model)
    with learner_code(target), checkpoints.attached(model):
        training.train(model, remaining, progress, valid_dl, device=device, on_epoch=on_epoch)
    hook.remove()
    if len(calls) != remaining:
        raise KataUserError(say(
            "{training}: train() called on_epoch {calls} times for {epochs} epochs; run `pytest {training}` to see "
            "why", training=target.display("training"), calls=len(calls), epochs=remaining))
    with learner_code(target):
        test_loss, test_accuracy = training.evaluate(model, test_dl, device=device)
    record["test"] = {"loss": plain(test_loss), "accuracy": plain(test_accuracy)}
    record["total_seconds"] = round(time.perf_counter() - start, 1)
    write_json(out / "history.json", record)
    for note in watch.notes():
        tell(say("note: {note}", note=note))
    closing(record, out, checkpoints.saving, tell)
    return record


def run_folder(settings: Settings) -> Path:
    """--out, or runs/<timestamp>; made."""
    out = Path(settings.out) if settings.out else Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    return out


# What `kata train --nproc` runs on its ranks (kata/commands/_ranks_train.py): the target's module for each role.
RANK_MODULES = {"data": "data", "model": "model", "training": "training", "plotting": "plotting",
                "distributed": "distributed", "checkpoint": "checkpoint"}


def train_on_ranks(settings: Settings, quiet: bool = False) -> dict:
    """``--nproc N``: the run on N ranks under torchrun, writing what a one-process run writes; return
    history.json's record."""
    from kata import pristine
    from kata.commands._torchrun import RanksFailed, launch

    started = time.time()
    tell = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    if settings.resume:
        raise KataUserError(_("--resume goes on in one process: leave out --nproc"))
    target = Target(target_path(settings.target))
    ranks = RANK_MODULES["distributed"]
    with learner_code(target):
        target.load(ranks)
    missing = pristine.unwritten_names(target.file(ranks), ranks)
    if missing:
        raise KataUserError(say("{file}: `{function}` is not written yet, and --nproc trains with it; "
                                "`kata hint {exercise}` helps", file=target.display(ranks), function=missing[0],
                                exercise=ranks))
    device = _ranks_device(settings.device, settings.nproc, tell)
    out = run_folder(settings)
    root, synthetic = data_root(settings, quiet)
    job = {"settings": asdict(settings), "target": str(target.path), "modules": RANK_MODULES, "out": str(out),
           "root": str(root), "synthetic": synthetic, "device": device, "quiet": quiet, "started": started,
           "lang": language()}
    try:
        launch("kata.commands._ranks_train", [json.dumps(job)], settings.nproc)
    except RanksFailed as err:
        if not str(err):   # the ranks were interrupted
            raise KeyboardInterrupt from None
        raise KataUserError(str(err)) from None
    return json.loads((out / "history.json").read_text())


def _ranks_device(choice: str, nproc: int, tell) -> str:
    """Where --nproc's ranks train: "cuda" (one GPU each, nccl) or "cpu" (gloo), with a note when that is not
    what --device asked."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if choice == "cuda" and gpus < nproc:
        raise KataUserError(say("--device cuda --nproc {n}: each rank needs a CUDA device of its own, and this "
                                "machine has {gpus}; leave out --device to train the ranks on the CPU",
                                n=nproc, gpus=gpus))
    if choice in ("cuda", "auto") and gpus >= nproc:
        return "cuda"
    if choice == "auto" and gpus:
        tell(say("  (--nproc {n}: fewer CUDA devices than ranks here, so the ranks train on the CPU, with gloo)",
                 n=nproc))
    elif choice == "sim":
        tell(say("  (--device sim: DistributedDataParallel does not run on the simulated accelerator, gloo has no "
                 "simgpu device, so the {n} ranks train on the CPU)", n=nproc))
    elif choice == "mps":
        tell(say("  (--device mps: DistributedDataParallel's backends do not run on MPS, so the {n} ranks train on "
                 "the CPU)", n=nproc))
    return "cpu"


def heading(target: Target, settings: Settings, splits, root: Path, synthetic: bool, device) -> str:
    """The run's first line: the target, the data, the sizes, the device."""
    train_ds, valid_ds, test_ds = splits
    return say(N_("kata train: {target} on synthetic CelebA ({train:,} train / {valid:,} valid / {test:,} test "
                  "images, {root}), {epochs} epochs, batch {batch}, device {device}") if synthetic else
               N_("kata train: {target} on CelebA ({train:,} train / {valid:,} valid / {test:,} test images, "
                  "{root}), {epochs} epochs, batch {batch}, device {device}"),
               target=target.display(), train=len(train_ds), valid=len(valid_ds), test=len(test_ds), root=root,
               epochs=settings.epochs, batch=settings.batch_size, device=device)


def epoch_line(record: dict, epoch: int, epochs: int) -> str:
    """An epoch's line, from the record's history and epoch times."""
    h = record["history"]
    return say("epoch {epoch:>2}/{epochs}  train loss {train_loss:.4f} acc {train_acc:.4f} | valid loss "
               "{valid_loss:.4f} acc {valid_acc:.4f}  ({seconds:.1f} s)", epoch=epoch,
               epochs=epochs, train_loss=h["loss_hist_train"][-1], train_acc=h["accuracy_hist_train"][-1],
               valid_loss=h["loss_hist_valid"][-1], valid_acc=h["accuracy_hist_valid"][-1],
               seconds=record["epoch_seconds"][-1])


def closing(record: dict, out: Path, checkpoint: bool, tell) -> None:
    """The run's last lines: the test accuracy, and the files written."""
    tell(say("test accuracy {accuracy:.4f} ({images:,} images), valid {valid:.4f}; {seconds:.0f} s in all",
             accuracy=record["test"]["accuracy"], images=record["data"]["n_test"],
             valid=record["history"]["accuracy_hist_valid"][-1], seconds=record["total_seconds"]))
    written = [out / "history.png", out / "history.json"] + ([out / CHECKPOINT] if checkpoint else [])
    tell(say("wrote {files} and {last}", files=", ".join(display(p) for p in written[:-1]),
             last=display(written[-1])))


def live_plot(plotting, path: Path, target: Target, device, tell):
    """The target's LivePlot; on an accelerator (a GPU, or the simulated one), None (the book's plot
    instead) while plotting.py is a stub, so a learner at the training exercise sees the seed's crash."""
    with learner_code(target):
        try:
            return plotting.LivePlot(path)
        except NotImplementedError:
            if device.type == "cpu":
                raise
    tell(say("  ({plotting} is not written yet: history.png is the book's plot of the raw history)",
             plotting=target.display("plotting")))
    return None


class learner_code:
    """Around calls into the target: its mistakes become a KataUserError that says
    which file and what to do; the kata's own bugs still raise as they are."""

    def __init__(self, target: Target):
        self.target = target

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or isinstance(exc, (KeyboardInterrupt, KataUserError)):
            return False
        if isinstance(exc, TargetError):
            raise KataUserError(str(exc)) from None
        message = learner_error(exc, self.target.path)
        if message is None:
            return False
        raise KataUserError(message) from None


