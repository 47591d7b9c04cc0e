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

``--device sim`` trains on the simulated accelerator (kata.sim) and also draws
the history each epoch as the book's notebook does, from the raw lists
(``ax.plot(x_arr, hist[2], '-o')``): a history of device tensors then crashes
with PyTorch's "can't convert simgpu:0 device type tensor to numpy", the seed's
error on a laptop, and ``kata train`` says where the tensors were put into the
history and what the fix is. (The learner's own LivePlot may convert entries,
as a correct one does, so it alone would not show the seed's crash.) On the
other devices the histories are converted for history.json, and a note after
the run says what they held and why it matters.

torch is imported inside the functions, so ``kata --help`` stays light.
"""

from __future__ import annotations

import ast
import platform
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from kata.checks import lessons
from kata.checks.history import HISTORY_NAMES
from kata.checks.lessons import say
from kata.commands._args import positive
from kata.files import write_json
from kata.harness.target import Target, TargetError, target_path
from kata.harness.tracebacks import display, learner_error

__all__ = ["BOOK", "HELP", "QUICK", "HistoryWatch", "KataUserError", "ProgressLoader", "Settings", "add_parser",
           "book_plot", "data_root", "learner_code", "pick_device", "plain", "run", "train"]

HELP = "train the book's CNN with an implementation (solutions by default)"

# `kata train` sizes: a quick run (about a minute on a 2-core CPU), and chapter 14's.
QUICK = dict(n_train=2000, n_valid=500, n_test=500, epochs=6)
BOOK = dict(n_train=16000, n_valid=1000, n_test=1000, epochs=30)


def add_parser(sub):
    p = sub.add_parser("train", help=HELP,
                       description="Train the book's CNN on CelebA with the chosen implementation's data, "
                                   "model, training and plotting modules. Writes history.png (redrawn each "
                                   "epoch) and history.json into --out, and ends with the test accuracy.")
    p.add_argument("--target", default="solutions",
                   help="the implementation: solutions (default), exercises, or a folder of your own")
    p.add_argument("--root", help="folder holding real CelebA in celeba/ (default: a synthetic set, "
                                  "made on first use in $KATA_DATA or ./data)")
    p.add_argument("--book", action="store_true", help="the book's run: 16,000 / 1,000 images, 30 epochs")
    p.add_argument("--train", type=positive, help=f"training images (default {QUICK['n_train']}; --book 16000)")
    p.add_argument("--valid", type=positive, help=f"validation images (default {QUICK['n_valid']}; --book 1000)")
    p.add_argument("--test", type=positive, help=f"synthetic test images (default {QUICK['n_test']}; --book 1000)")
    p.add_argument("--epochs", type=positive, help=f"epochs (default {QUICK['epochs']}; --book 30)")
    p.add_argument("--batch-size", type=positive, default=32, help="batch size (default 32, as the book)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps", "sim"],
                   help="auto (default) picks cuda, then mps, then cpu; sim is the simulated accelerator "
                        "(kata.sim): a GPU's device rules on any machine, so the seed's crash happens here too")
    p.add_argument("--out", help="folder for history.png and history.json (default runs/<timestamp>)")
    return p


def run(args) -> int:
    preset = BOOK if args.book else QUICK
    chosen = dict(n_train=args.train, n_valid=args.valid, n_test=args.test, epochs=args.epochs)
    settings = Settings(**{k: v if v is not None else preset[k] for k, v in chosen.items()},
                        target=args.target, root=args.root, batch_size=args.batch_size,
                        device=args.device, out=args.out, book=args.book)
    try:
        train(settings)
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
        raise KataUserError("--device cuda: no CUDA device is available here (try --device auto)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise KataUserError("--device mps: MPS is not available here (try --device auto)")
    return device


def data_root(settings: Settings, quiet: bool = False) -> tuple[Path, bool]:
    """The folder holding celeba/, and whether it is the synthetic set."""
    if settings.root:
        root = Path(settings.root)
        if not (root / "celeba").is_dir():
            raise KataUserError(
                f"--root {root}: there is no celeba/ folder in it. Put real CelebA under {root}/celeba/ "
                f"(see the README), or leave out --root to use a synthetic set")
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

    def __init__(self, dl, epochs: int):
        self.dl, self.epochs, self.epoch = dl, epochs, 0
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
        self._bar = tqdm(total=len(self.dl), desc=f"epoch {self.epoch}/{self.epochs}", unit="batch",
                         leave=False, file=sys.stderr, dynamic_ncols=True, disable=None)  # none in logs
        try:
            for x, y in self.dl:
                self._y = y
                yield x, y
                self._bar.update(1)
        finally:
            self._bar.close()
            self._bar = self._y = None


def plain(value):
    """A history entry as a JSON number, whatever the learner returned."""
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def train(settings: Settings, quiet: bool = False) -> dict:
    """Train, evaluate and write the run's files; return what history.json holds."""
    import torch

    start = time.perf_counter()
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    target = Target(target_path(settings.target))
    modules = {name: target.module(name) for name in ("data", "model", "training", "plotting")}
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

    kind = "synthetic CelebA" if synthetic else "CelebA"
    say(f"kata train: {target.display()} on {kind} ({len(train_ds):,} train / {len(valid_ds):,} valid / "
        f"{len(test_ds):,} test images, {root}), {settings.epochs} epochs, batch {settings.batch_size}, "
        f"device {device}")
    if not settings.book:
        say("  (a quick run; `kata train --book` runs the book's 16,000 / 1,000 images for 30 epochs)")
    live = _live_plot(plotting, out / "history.png", target, device, say)

    record = {
        "settings": {**asdict(settings), "target": str(target.path)},
        "data": {"root": str(root.resolve()), "synthetic": synthetic,
                 "n_train": len(train_ds), "n_valid": len(valid_ds), "n_test": len(test_ds)},
        "device": str(device),
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
        "history": {},
        "epoch_seconds": [],
        "test": None,
    }
    watch = HistoryWatch(target)
    epoch_start = [time.perf_counter()]

    def on_epoch(epoch, history):
        now = time.perf_counter()
        record["epoch_seconds"].append(round(now - epoch_start[0], 3))
        epoch_start[0] = now
        watch.look(history, sys._getframe(1))
        if device.type == "simgpu":  # the seed's plot, from the raw history: its crash, explained
            watch.plot_as_the_book_does(history)
        record["history"] = {n: [plain(v) for v in h] for n, h in zip(HISTORY_NAMES, history, strict=False)}
        with learner_code(target):
            if live is not None:
                live.update(epoch, history)
            else:
                book_plot(history).savefig(out / "history.png")
        write_json(out / "history.json", record)
        h = record["history"]
        say(f"epoch {epoch + 1:>2}/{settings.epochs}  train loss {h['loss_hist_train'][-1]:.4f} "
            f"acc {h['accuracy_hist_train'][-1]:.4f} | valid loss {h['loss_hist_valid'][-1]:.4f} "
            f"acc {h['accuracy_hist_valid'][-1]:.4f}  ({record['epoch_seconds'][-1]:.1f} s)")

    progress = ProgressLoader(train_dl, settings.epochs)
    hook = progress.attach(model)
    with learner_code(target):
        training.train(model, settings.epochs, progress, valid_dl, device=device, on_epoch=on_epoch)
    hook.remove()
    if len(record["epoch_seconds"]) != settings.epochs:
        raise KataUserError(
            f"{target.display('training')}: train() called on_epoch {len(record['epoch_seconds'])} times for "
            f"{settings.epochs} epochs; run `pytest {target.display('training')}` to see why")
    with learner_code(target):
        test_loss, test_accuracy = training.evaluate(model, test_dl, device=device)
    record["test"] = {"loss": plain(test_loss), "accuracy": plain(test_accuracy)}
    record["total_seconds"] = round(time.perf_counter() - start, 1)
    write_json(out / "history.json", record)
    for note in watch.notes():
        say(f"note: {note}")
    say(f"test accuracy {record['test']['accuracy']:.4f} ({len(test_ds):,} images), "
        f"valid {record['history']['accuracy_hist_valid'][-1]:.4f}; {record['total_seconds']:.0f} s in all")
    say(f"wrote {display(out / 'history.png')} and {display(out / 'history.json')}")
    return record


def _live_plot(plotting, path: Path, target: Target, device, say):
    """The target's LivePlot; on the simulated accelerator, None (the book's plot instead) while
    plotting.py is a stub, so a learner at the training exercise sees the seed's crash too."""
    with learner_code(target):
        try:
            return plotting.LivePlot(path)
        except NotImplementedError:
            if device.type != "simgpu":
                raise
    say(f"  ({target.display('plotting')} is not written yet: history.png is the book's plot of the raw history)")
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


# --- what the histories held, and where it was put there --------------------------------------

# The kinds of history entry that are not Python floats, as the checks name them (kata.checks.lessons).
_KINDS = ("device tensor", "grad tensor", "cpu tensor", "numpy scalar")


def _kind(value) -> str | None:
    """Why a history entry is not a Python float (one of _KINDS); None if it is a number that plots."""
    from kata.checks.messages import entry_kind

    kind = entry_kind(value)
    return kind if kind in _KINDS else None


def _describe(value) -> str:
    from kata.checks.messages import describe

    return describe(value)


def book_plot(history):
    """The book's learning curves, drawn from the raw history exactly as the seed's notebook did
    (no conversion: a device tensor makes NumPy raise, as it did for the seed)."""
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4))
    x_arr = np.arange(len(history[0])) + 1
    for panel, (train_hist, valid_hist, what) in enumerate(((history[0], history[1], "loss"),
                                                             (history[2], history[3], "acc."))):
        ax = fig.add_subplot(1, 2, panel + 1)
        ax.plot(x_arr, train_hist, "-o", label=f"Train {what}")
        ax.plot(x_arr, valid_hist, "--<", label=f"Validation {what}")
        ax.legend()
        ax.set_xlabel("Epoch")
        ax.set_ylabel("Loss" if what == "loss" else "Accuracy")
    return fig


class HistoryWatch:
    """What the learner's histories hold, per list, and the line of their code that put
    it there (read from the frame that called on_epoch, the learner's train)."""

    def __init__(self, target: Target):
        self.target = target
        self.found: dict[str, dict[str, tuple[int, object]]] = {}   # kind -> {list name: (epoch, value)}
        self.origin: dict[str, str] = {}                           # list name -> "file, line N: source"

    def look(self, history, caller) -> None:
        for name, values in zip(HISTORY_NAMES, history, strict=False):
            for epoch, value in enumerate(values):
                kind = _kind(value)
                if kind and name not in self.found.setdefault(kind, {}):
                    self.found[kind][name] = (epoch, value)
                    self.origin.setdefault(name, self._origin(name, history, caller))

    def _origin(self, name: str, history, frame) -> str:
        """``exercises/training.py, line 52: accuracy_hist_train.append(...)``, or ''."""
        while frame is not None and not Path(frame.f_code.co_filename).resolve().is_relative_to(self.target.path):
            frame = frame.f_back
        if frame is None:
            return ""
        index = HISTORY_NAMES.index(name)
        lists = {n for n, v in frame.f_locals.items() if v is history[index]}
        wholes = {n for n, v in frame.f_locals.items() if v is history}
        file, line = Path(frame.f_code.co_filename), frame.f_lineno
        try:
            source = file.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (OSError, SyntaxError, UnicodeDecodeError):
            return ""
        functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and f.lineno <= line <= (f.end_lineno or f.lineno)]

        def is_the_list(node) -> bool:
            if isinstance(node, ast.Name):
                return node.id in lists
            if isinstance(node, ast.Attribute):
                return node.attr == name
            return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in wholes
                    and isinstance(node.slice, ast.Constant) and node.slice.value == index)

        for node in ast.walk(functions[-1]) if functions else ():
            hit = ((isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("append", "extend", "insert") and is_the_list(node.func.value))
                   or (isinstance(node, (ast.Assign, ast.AugAssign)) and any(
                       is_the_list(t.value if isinstance(t, ast.Subscript) else t)
                       for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))))
            if hit:
                text = ast.get_source_segment(source, node) or ""
                return f"{display(file)}, line {node.lineno}: {' '.join(text.split())}"
        return f"{display(file)}, in {functions[-1].name}" if functions else display(file)

    def _lists(self, kind: str) -> str:
        lines = []
        for name, (epoch, value) in self.found.get(kind, {}).items():
            where = f", put there at {self.origin[name]}" if self.origin.get(name) else ""
            lines.append(f"  {name} (epoch {epoch + 1}: {_describe(value)}){where}")
        return "\n".join(lines)

    def plot_as_the_book_does(self, history) -> None:
        """Draw the history as the seed did; its crash becomes a KataUserError that explains it."""
        try:
            book_plot(history)
        except (TypeError, RuntimeError) as err:
            if "numpy" not in str(err):
                raise
            kind = "device tensor" if "device type tensor" in str(err) else "grad tensor"
            floats = [n for n, h in zip(HISTORY_NAMES, history, strict=False) if all(_kind(v) is None for v in h)]
            shown = ""
            if floats:
                template = lessons.TRAIN_CRASH_FLOATS if len(floats) > 1 else lessons.TRAIN_CRASH_FLOAT
                shown = say(template, names=", ".join(floats))
            raise KataUserError(say(lessons.TRAIN_CRASH, error=f"{type(err).__name__}: {err}",
                                    held=lessons.ENTRY_HELD[kind], lists=self._lists(kind), floats=shown,
                                    lesson=lessons.ENTRY_LESSONS[kind],
                                    training=self.target.display("training"))) from None

    def notes(self) -> list[str]:
        """One note per kind of entry that is not a Python float, each with its own reason (the checks'
        own words: kata.checks.lessons)."""
        training = self.target.display("training")
        found = []
        for kind in _KINDS:
            if not self.found.get(kind):
                continue
            note = say(lessons.TRAIN_NOTE, held=lessons.ENTRY_HELD[kind], lists=self._lists(kind),
                       lesson=lessons.ENTRY_LESSONS[kind], training=training)
            if kind == "cpu tensor":
                note += "\n" + say(lessons.TRAIN_NOTE_SIM, target=self.target.display())
            found.append(note)
        return found
