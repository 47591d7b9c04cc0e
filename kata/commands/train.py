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
from kata.files import write_json
from kata.harness.target import Target, TargetError, target_path
from kata.harness.tracebacks import display, learner_error
from kata.i18n import N_, _, say
from kata.records.history import HISTORY_NAMES

__all__ = ["BOOK", "HELP", "QUICK", "HistoryWatch", "KataUserError", "ProgressLoader", "Settings", "add_parser",
           "book_plot", "data_root", "learner_code", "pick_device", "plain", "run", "settings_of", "train"]

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
                    data_seed=earlier.get("data_seed", 0), resume=str(resume) if resume else None)


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


class ProgressLoader:
    """The training DataLoader, with a progress bar over its batches.

    It looks like the DataLoader to the learner's loop (`for x, y in dl`,
    `len(dl)`, `dl.dataset`, `dl.batch_size`). The running loss in the bar is
    computed from the model's output by a forward hook (`attach`), so the
    learner's loop needs no change; it copies each output to the host, which
    costs a GPU one sync per batch: fine for a progress bar, not for a benchmark.
    """

    def __init__(self, dl, epochs: int, done: int = 0):
        self.dl, self.epochs, self.epoch = dl, epochs, done
        self.dataset, self.batch_size = dl.dataset, dl.batch_size
        self._bar = None
        self._y = None
        self._loss_sum = 0.0
        self._seen = 0

    def __len__(self) -> int:
        return len(self.dl)

    def attach(self, model):
        return model.register_forward_hook(self._on_forward)

    def _on_forward(self, module, args, output) -> None:
        if self._bar is None or self._y is None or not module.training:
            return
        import torch
        import torch.nn.functional as F

        with torch.no_grad():
            p = output.detach()[:, 0].float().cpu().clamp(1e-7, 1 - 1e-7)
            y = self._y.float().cpu()
            if p.shape == y.shape:
                self._loss_sum += F.binary_cross_entropy(p, y, reduction="sum").item()
                self._seen += len(y)
                self._bar.set_postfix(loss=f"{self._loss_sum / self._seen:.4f}", refresh=False)

    def __iter__(self):
        from tqdm import tqdm

        self.epoch += 1
        self._loss_sum, self._seen = 0.0, 0
        self._bar = tqdm(total=len(self.dl), desc=say("epoch {epoch}/{epochs}", epoch=self.epoch, epochs=self.epochs),
                         unit=_("batch"),
                         leave=False, file=sys.stderr, dynamic_ncols=True, disable=None)  # none in logs
        try:
            for x, y in self.dl:
                self._y = y
                yield x, y
                self._bar.update(1)
        finally:
            self._bar.close()
            self._bar = self._y = None


def train(settings: Settings, quiet: bool = False) -> dict:
    """Train, evaluate and write the run's files; return what history.json holds."""
    import torch

    start = time.perf_counter()
    tell = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    target = Target(target_path(settings.target))
    modules = {name: target.module(name) for name in ("data", "model", "training", "plotting")}
    try:
        resume = checkpoint_file(settings.resume) if settings.resume else None
    except ResumeError as err:
        raise KataUserError(str(err)) from None
    out = Path(settings.out) if settings.out else Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
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

    tell(say(N_("kata train: {target} on synthetic CelebA ({train:,} train / {valid:,} valid / {test:,} test images, "
                "{root}), {epochs} epochs, batch {batch}, device {device}") if synthetic else
             N_("kata train: {target} on CelebA ({train:,} train / {valid:,} valid / {test:,} test images, {root}), "
                "{epochs} epochs, batch {batch}, device {device}"),
             target=target.display(), train=len(train_ds), valid=len(valid_ds), test=len(test_ds), root=root,
             epochs=settings.epochs, batch=settings.batch_size, device=device))
    if not settings.book:
        tell(_("  (a quick run; `kata train --book` runs the book's 16,000 / 1,000 images for 30 epochs)"))
    if resume is not None:
        tell(say_(lessons.RESUMED, path=display(resume), done=done, epochs=settings.epochs))
    live = _live_plot(plotting, out / "history.png", target, device, tell)

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
        h = record["history"]
        tell(say("epoch {epoch:>2}/{epochs}  train loss {train_loss:.4f} acc {train_acc:.4f} | valid loss "
                 "{valid_loss:.4f} acc {valid_acc:.4f}  ({seconds:.1f} s)", epoch=done + epoch + 1,
                 epochs=settings.epochs, train_loss=h["loss_hist_train"][-1], train_acc=h["accuracy_hist_train"][-1],
                 valid_loss=h["loss_hist_valid"][-1], valid_acc=h["accuracy_hist_valid"][-1],
                 seconds=record["epoch_seconds"][-1]))

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
    tell(say("test accuracy {accuracy:.4f} ({images:,} images), valid {valid:.4f}; {seconds:.0f} s in all",
             accuracy=record["test"]["accuracy"], images=len(test_ds),
             valid=record["history"]["accuracy_hist_valid"][-1], seconds=record["total_seconds"]))
    written = [out / "history.png", out / "history.json"] + ([out / CHECKPOINT] if checkpoints.saving else [])
    tell(say("wrote {files} and {last}", files=", ".join(display(p) for p in written[:-1]),
             last=display(written[-1])))
    return record


def _live_plot(plotting, path: Path, target: Target, device, tell):
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


