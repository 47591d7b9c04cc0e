"""``kata bench``: run the epoch benchmarks and show them at a glance.

It runs the benchmarks in tests/benchmarks/ with pytest-benchmark, against a
target (`solutions` by default: its `sync.train_epoch` is the one-sync loop),
in a child pytest process, then prints a table (device x loop style, median
epoch time, images per second, and the ratios: GPU over CPU, one sync over
per-batch sync), and writes `bench.json` (pytest-benchmark's report) and
`bench.png` (a bar chart) into `--out`. Rows that could not run say why.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from kata.commands._args import plot_language
from kata.harness.target import target_path
from kata.harness.tracebacks import display
from kata.i18n import N_, _, pad, say, width
from kata.project import locate

__all__ = ["HELP", "add_parser", "chart", "label_text", "ratios", "rows", "run", "run_benchmarks", "table_text"]

HELP = N_("time training epochs on each device and loop style")
# The loop styles the benchmarks time (tests/benchmarks: their extra_info "style"), as the table shows them.
STYLES = (N_("per-batch sync"), N_("one sync"))


def add_parser(sub):
    p = sub.add_parser("bench", help=_(HELP),
                       description=_("Run the epoch benchmarks (tests/benchmarks) with pytest-benchmark and print "
                                     "device x loop style, median epoch time, images per second and the ratios; "
                                     "write bench.json and bench.png into --out."))
    p.add_argument("--target", default="solutions",
                   help=_("whose sync.train_epoch is the one-sync loop: solutions (default), exercises, or a folder"))
    p.add_argument("--out", help=_("folder for bench.json and bench.png (default runs/bench-<timestamp>)"))
    return p


def run_benchmarks(target: str, out: Path, keyword: str | None = None) -> tuple[dict, list[tuple[str, str]]]:
    """Run the benchmarks (those pytest's ``-k keyword`` selects, if given); return pytest-benchmark's
    JSON and (how many, why) for rows not run."""
    out.mkdir(parents=True, exist_ok=True)
    report = out / "bench.json"
    path = target_path(target)
    command = [sys.executable, "-m", "pytest", "--target", str(path), str(locate().checks / "benchmarks"),
               "--benchmark-only", f"--benchmark-json={report}", "-p", "no:cacheprovider", "-q", "-rs",
               "--benchmark-columns=median,rounds", "--no-header"] + (["-k", keyword] if keyword else [])
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    skipped = []
    for line in proc.stdout.splitlines():
        # "SKIPPED [1] tests/benchmarks/test_epoch_speed.py:123: no CUDA device"
        if line.startswith("SKIPPED ["):
            count, _sep, rest = line[len("SKIPPED ["):].partition("] ")
            skipped.append((count, rest.rpartition(": ")[2]))
    if proc.returncode != 0 or not report.is_file():
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
        raise RuntimeError(say("the benchmarks failed (pytest exit code {code}):\n{tail}", code=proc.returncode,
                               tail=tail))
    return json.loads(report.read_text()), skipped


def rows(report: dict) -> list[dict]:
    """One row per benchmark: what ran, its median epoch time and images per second."""
    result = []
    for b in report["benchmarks"]:
        info = b.get("extra_info", {})
        median = b["stats"]["median"]
        label = info.get("style", "?")
        if info.get("kind") == "jpeg pipeline":
            label = (f"JPEG pipeline, workers={info.get('num_workers')}"
                     + (", pinned" if info.get("pin_memory") else ""))
        result.append({"name": b["name"], "device": info.get("device", "?"), "kind": info.get("kind"),
                       "label": label, "median_s": median, "images": info.get("images", 0),
                       "images_per_s": info.get("images", 0) / median if median else float("nan")})
    return result


def ratios(table: list[dict]) -> list[str]:
    """Plain sentences: one sync over per-batch sync, per device; GPU over CPU, per style."""
    memory = {(r["device"], r["label"]): r for r in table if r["kind"] == "in-memory"}
    lines = []
    for device in ("cpu", "cuda"):
        per_batch, one = memory.get((device, "per-batch sync")), memory.get((device, "one sync"))
        if per_batch and one:
            lines.append(say("{device}: one sync per epoch runs {ratio:.2f}x the images per second of a sync per "
                             "batch", device=device, ratio=one["images_per_s"] / per_batch["images_per_s"]))
    for style in ("per-batch sync", "one sync"):
        cpu, gpu = memory.get(("cpu", style)), memory.get(("cuda", style))
        if cpu and gpu:
            lines.append(say("{style}: the GPU trains {ratio:.1f}x the images per second of the CPU",
                             style=_(style), ratio=gpu["images_per_s"] / cpu["images_per_s"]))
    return lines


def label_text(label: str) -> str:
    """A row's label (:func:`rows`) in the kata's language."""
    jpeg = re.fullmatch(r"JPEG pipeline, workers=(.*?)(, pinned)?", label)
    if jpeg is None:
        return _(label)
    if jpeg[2]:
        return say("JPEG pipeline, workers={workers}, pinned", workers=jpeg[1])
    return say("JPEG pipeline, workers={workers}", workers=jpeg[1])


def table_text(table: list[dict], skipped: list[tuple[str, str]]) -> str:
    # The columns are as wide as what they show needs (in English: 7, 36, 13 and 10)
    device = max([7, width(_("device")) + 1] + [len(r["device"]) for r in table])
    loop = max([36, width(_("loop"))] + [width(label_text(r["label"])) for r in table])
    heads = (pad(_("device"), device), pad(_("loop"), loop), pad(_("median epoch"), 13, ">"),
             pad(_("images/s"), 10, ">"))
    lines = [" ".join(heads)]
    for r in sorted(table, key=lambda r: (r["kind"] != "in-memory", r["device"], r["label"])):
        lines.append(f"{r['device']:<{device}} {pad(label_text(r['label']), loop)} "
                     + say("{seconds:>11.3f} s", seconds=r["median_s"]) + f" {r['images_per_s']:>10.0f}")
    for count, reason in skipped:
        template = N_("  {count} row not run: {reason}") if count == "1" else N_("  {count} rows not run: {reason}")
        lines.append(say(template, count=count, reason=reason))
    return "\n".join(lines)


def chart(table: list[dict], path: Path) -> None:
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ordered = sorted(table, key=lambda r: (r["kind"] != "in-memory", r["device"], r["label"]))
    fig = Figure(figsize=(9, 0.6 * len(ordered) + 1.5), layout="tight")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    shown, rc = plot_language()
    labels = [f"{r['device']} · {label_text(r['label']) if rc else r['label']}" for r in ordered]
    colors = ["tab:green" if r["device"] == "cuda" else "tab:blue" for r in ordered]
    with matplotlib.rc_context(rc):
        ax.barh(labels, [r["images_per_s"] for r in ordered], color=colors)
        ax.invert_yaxis()
        ax.set_xlabel(shown(N_("images per second (one training epoch of the book's CNN; higher is faster)")))
        for y, r in enumerate(ordered):
            ax.text(r["images_per_s"], y, f" {r['images_per_s']:.0f}/s", va="center")
        fig.savefig(path)


def run(args) -> int:
    folder = Path(args.out) if args.out else Path("runs") / f"bench-{datetime.now():%Y%m%d-%H%M%S}"
    print(say("kata bench: timing training epochs with {target} (a few minutes on a CPU) ...", target=args.target),
          flush=True)
    try:
        report, skipped = run_benchmarks(args.target, folder)
    except RuntimeError as err:
        print(f"kata bench: {err}", file=sys.stderr)
        return 1
    table = rows(report)
    print(table_text(table, skipped))
    for line in ratios(table):
        print(line)
    chart(table, folder / "bench.png")
    print(say("wrote {json} and {png}", json=display(folder / "bench.json"), png=display(folder / "bench.png")))
    return 0
