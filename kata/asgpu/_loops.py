"""The script's loops over DataLoaders, and what ``--quick`` and a display-less run change in them.

:func:`watch_loaders` wraps ``DataLoader.__iter__``: each pass over a loader is put down as the
span of sync events it saw (so the report can say "per pass over the DataLoader at train.py:58"),
and under ``--quick N`` a pass ends after N batches.  :func:`figures_to_files` makes matplotlib's
interactive calls (``plt.ion``, ``plt.pause``, ``plt.show``) draw on Agg and save each figure.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Figures", "Passes", "figures_to_files", "patch_pyplot", "watch_loaders"]


@dataclass
class Passes:
    """The passes over each DataLoader: {"file:line" of its ``for``: [(first event, end event), ...]}."""

    spans: dict = field(default_factory=dict)
    open: list = field(default_factory=list)  # [label, start] of the passes not finished

    def start(self, label: str, at: int) -> list:
        span = [label, at]
        self.open.append(span)
        return span

    def end(self, span: list, at: int) -> None:
        if span in self.open:
            self.open.remove(span)
            self.spans.setdefault(span[0], []).append((span[1], at))

    def close_all(self, at: int) -> None:
        for span in list(self.open):
            self.end(span, at)

    def loop_of(self, index: int) -> str | None:
        """The loader whose pass (the innermost, the latest started) holds event ``index``."""
        best, start = None, -1
        for label, spans in self.spans.items():
            for first, end in spans:
                if first <= index < end and first > start:
                    best, start = label, first
        return best


def _where(frame) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def watch_loaders(passes: Passes, events: list, quick: int | None) -> None:
    """Wrap ``DataLoader.__iter__``: put each pass down in ``passes`` (its span of ``events``), and
    end it after ``quick`` batches when that is given."""
    from torch.utils.data import DataLoader

    original = DataLoader.__iter__

    def __iter__(self):
        label = _where(sys._getframe(1))
        inner = original(self)

        def batches():
            span = passes.start(label, len(events))
            try:
                for n, batch in enumerate(inner):
                    if quick is not None and n >= quick:
                        break
                    yield batch
            finally:
                passes.end(span, len(events))
        return batches()

    DataLoader.__iter__ = __iter__


@dataclass
class Figures:
    """Where the run saves matplotlib's figures, and which it saved."""

    folder: Path
    stem: str
    saved: list = field(default_factory=list)

    def save_all(self) -> None:
        import matplotlib.pyplot as plt

        for number in plt.get_fignums():
            path = self.folder / f"{self.stem}-figure{number}.png"
            self.folder.mkdir(parents=True, exist_ok=True)
            try:
                plt.figure(number).savefig(path)
            except Exception:  # noqa: BLE001 - a figure that can't draw: the script's error, shown where it drew
                continue
            if path not in self.saved:
                self.saved.append(path)


def figures_to_files(figures: Figures) -> None:
    """Before the script imports pyplot: draw on Agg; ``plt.pause`` and ``plt.show`` save every figure
    (``plt.pause`` without waiting), so a run shows what a window would have."""
    os.environ["MPLBACKEND"] = "Agg"


def patch_pyplot(figures: Figures) -> None:
    """After pyplot is imported: its interactive calls save the figures instead."""
    import matplotlib
    import matplotlib.pyplot as plt

    matplotlib.use("Agg", force=True)

    def pause(interval=0):
        for number in plt.get_fignums():
            plt.figure(number).canvas.draw()
        figures.save_all()

    def show(*args, **kwargs):
        figures.save_all()

    plt.pause, plt.show = pause, show
