"""Writing a synthetic CelebA to disk: `generate()`, with its cache, resuming and safety checks.

`generate(root, ...)` plans every image (kata.data.synth.planning), draws them
on worker processes (kata.data.synth.drawing), each image saved under a
temporary name and then renamed, and writes the five text files in the real
files' formats (spacing included). The marker KATA_SYNTHETIC.json, written
last, says "this set is complete"; while the set is being written,
KATA_SYNTHETIC.partial.json says "unfinished". The text files and markers go
through kata.files.atomic_write: a reader never sees half a file.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kata.data.layout import (
    ATTRIBUTE_NAMES,
    HEIGHT,
    IMAGE_FOLDER,
    MARKER_NAME,
    PARTIAL_NAME,
    SMILING,
    TEXT_FILES,
    WIDTH,
)
from kata.data.synth.drawing import render
from kata.data.synth.geometry import bbox, landmarks
from kata.data.synth.planning import check_counts, check_seed, image_jobs, plan_face
from kata.files import atomic_write, write_json
from kata.i18n import _, say

__all__ = ["generate", "GENERATOR", "VERSION"]

# The generator's name in the marker. (The module's name when markers were first
# written; kept, so that sets drawn before the move still count as the same set.)
GENERATOR = "kata.synth"
VERSION = 1  # bump whenever the drawing or the labels change: caches are keyed on it


# --- the text files -------------------------------------------------------------


def _write_text(path: Path, lines) -> None:
    """Write a text file atomically (kata.files.atomic_write): a reader never sees half a file."""
    atomic_write(path, "".join(lines))


def _write_annotations(folder: Path, rows) -> None:
    """The five text files, in the real files' formats (spacing included).

    rows: one (filename, split, identity, attrs, bbox, landmarks) per image, in file order.
    """
    n = len(rows)
    # list_attr_celeba.txt: the count, the names (the real header ends in a space), then " -1" / "  1" columns
    _write_text(folder / "list_attr_celeba.txt",
                [f"{n}\n", " ".join(ATTRIBUTE_NAMES) + " \n"]
                + [name + "".join(f" {v:2d}" for v in attrs) + "\n" for name, _, _, attrs, _, _ in rows])
    _write_text(folder / "list_eval_partition.txt", [f"{name} {split}\n" for name, split, *_ in rows])
    _write_text(folder / "identity_CelebA.txt", [f"{name} {identity}\n" for name, _, identity, *_ in rows])
    _write_text(folder / "list_bbox_celeba.txt",
                [f"{n}\n", "image_id x_1 y_1 width height\n"]
                + [f"{name}{b[0]:6d}{b[1]:4d}{b[2]:4d}{b[3]:4d}\n" for name, _, _, _, b, _ in rows])
    _write_text(folder / "list_landmarks_align_celeba.txt",
                [f"{n}\n", "lefteye_x lefteye_y righteye_x righteye_y nose_x nose_y "
                            "leftmouth_x leftmouth_y rightmouth_x rightmouth_y\n"]
                + [name + " " + "".join(f"{v:5d}" for v in points) + "\n" for name, _, _, _, _, points in rows])


# --- the images, in parallel ------------------------------------------------------


def _draw_chunk(args) -> list[tuple]:
    """Worker: plan, draw and save some images; return their rows for the text files.

    Each image is written to a temporary name, then renamed: a file with its final
    name is always complete (so an interrupted run can be resumed).
    """
    folder, seed, jobs = args
    people: dict[int, dict] = {}
    rows = []
    for index, identity, split, draw in jobs:
        face = plan_face(seed, index, identity, split, people)
        if draw:
            final = os.path.join(folder, face["filename"])
            tmp = f"{final}.{os.getpid()}.part"
            render(face).save(tmp, format="JPEG", quality=face["photo"]["quality"])
            os.replace(tmp, final)
        rows.append((face["filename"], split, identity, face["attrs"], bbox(face), landmarks(face)))
    return rows


def _draw_images(folder: Path, seed: int, jobs, workers: int, progress: bool) -> list[tuple]:
    """Draw the images in chunks, on `workers` processes; return all rows, in file order."""
    from tqdm import tqdm

    size = max(8, min(200, math.ceil(len(jobs) / (workers * 8))))
    chunks = [(str(folder), seed, jobs[i:i + size]) for i in range(0, len(jobs), size)]
    rows = []
    with tqdm(total=sum(draw for *_, draw in jobs), unit="img", desc=_("drawing faces"), file=sys.stderr,
              disable=not progress, dynamic_ncols=True) as bar:
        if workers == 1 or len(chunks) == 1:
            results = map(_draw_chunk, chunks)
            for chunk, done in zip(chunks, results, strict=True):
                rows += done
                bar.update(sum(draw for *_, draw in chunk[2]))
        else:
            with ProcessPoolExecutor(max_workers=min(workers, len(chunks))) as pool:
                for chunk, done in zip(chunks, pool.map(_draw_chunk, chunks), strict=True):
                    rows += done
                    bar.update(sum(draw for *_, draw in chunk[2]))
    return rows


# --- generate: the public entry point ------------------------------------------------


def _read_json(path: Path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _same_set(marker, params) -> bool:
    return marker is not None and all(marker.get(k) == v for k, v in params.items())


def _is_complete(folder: Path, n: int) -> bool:
    """All text files there, and every image 000001.jpg .. n."""
    images = folder / IMAGE_FOLDER
    if not images.is_dir() or not all((folder / name).is_file() for name in TEXT_FILES):
        return False
    present = set(os.listdir(images))
    return all(f"{i:06d}.jpg" in present for i in range(1, n + 1))


_OWNED_IMAGE = re.compile(r"^\d{6}\.jpg(\.\d+\.part)?$")


def _remove_owned_files(folder: Path) -> None:
    """Remove what a previous run of the generator wrote (and nothing else).

    That includes what an interrupted write left: NAME.part (the temporary name
    before kata.files) and .NAME.*.part (kata.files.atomic_write's).
    """
    for name in (*TEXT_FILES, MARKER_NAME):
        for path in (folder / name, folder / (name + ".part"), *folder.glob(f".{name}.*.part")):
            if path.is_file():
                path.unlink()
    for path in folder.glob(f".{PARTIAL_NAME}.*.part"):
        path.unlink()
    images = folder / IMAGE_FOLDER
    if images.is_dir():
        for entry in os.scandir(images):
            if entry.is_file() and _OWNED_IMAGE.match(entry.name):
                os.unlink(entry.path)
    (folder / PARTIAL_NAME).unlink(missing_ok=True)


def _foreign_files(folder: Path) -> list[str]:
    """Signs of a data set that the generator did not write (e.g. the real CelebA)."""
    found = [name for name in (*TEXT_FILES, "img_align_celeba.zip") if (folder / name).exists()]
    images = folder / IMAGE_FOLDER
    if images.is_dir() and any(True for _ in os.scandir(images)):
        found.append(IMAGE_FOLDER + "/ (not empty)")
    elif images.exists() and not images.is_dir():
        found.append(IMAGE_FOLDER + " (a file, not a folder)")
    return found


def generate(root, n_train: int = 16000, n_valid: int = 1000, n_test: int = 1000, seed: int = 0,
             workers: int | None = None, progress: bool = True) -> Path:
    """Write a synthetic CelebA under ``root/celeba/`` and return that folder.

    The images are numbered through the splits as in CelebA: train first, then
    valid, then test. The same arguments always give byte-identical files,
    whatever ``workers`` is (None: one process per CPU).

    If ``root/celeba`` already holds the same synthetic set (same version, seed
    and counts), nothing is drawn: the folder is returned at once. A different
    or unfinished synthetic set is replaced (an unfinished one with the same
    arguments is resumed). A data set that this generator did not write (say,
    the real CelebA) is never touched: that raises FileExistsError.

    progress=True shows a tqdm bar (on stderr) while the images are drawn.
    Bad arguments (negative or non-integer counts, a root that is a file)
    raise ValueError.
    """
    counts = check_counts(n_train, n_valid, n_test)
    seed = check_seed(seed)
    if workers is None:
        workers = os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1:
        raise ValueError(say("workers must be a whole number >= 1 (or None: one per CPU), got {workers!r}",
                             workers=workers))
    root = Path(root).expanduser()
    if root.exists() and not root.is_dir():
        raise ValueError(say("root {root!r} is a file; give the folder that should hold celeba/", root=str(root)))
    folder = root / "celeba"
    if folder.exists() and not folder.is_dir():
        raise ValueError(say("{folder!r} is a file; generate() writes the folder celeba/ there", folder=str(folder)))

    params = {"generator": GENERATOR, "version": VERSION, "seed": seed, "counts": counts}
    total = sum(counts.values())
    marker = _read_json(folder / MARKER_NAME)
    partial = _read_json(folder / PARTIAL_NAME)
    if _same_set(marker, params) and _is_complete(folder, total):
        return folder  # cached
    ours = (folder / MARKER_NAME).exists() or (folder / PARTIAL_NAME).exists()
    if folder.is_dir() and not ours:
        foreign = _foreign_files(folder)
        if foreign:
            raise FileExistsError(say(
                "{folder} already holds a data set that kata did not draw (no {marker} in it; found: {found}). It "
                "may be the real CelebA, so it is left untouched. Use it as it is, or pick another root for the "
                "synthetic set (e.g. `kata data --root data-synthetic`).",
                folder=folder, marker=MARKER_NAME, found=", ".join(foreign)))
    resume = _same_set(marker, params) or _same_set(partial, params)
    if not resume:
        _remove_owned_files(folder)

    started = time.time()
    (folder / IMAGE_FOLDER).mkdir(parents=True, exist_ok=True)
    (folder / MARKER_NAME).unlink(missing_ok=True)
    write_json(folder / PARTIAL_NAME, params)  # "being written"
    present = set(os.listdir(folder / IMAGE_FOLDER)) if resume else set()
    jobs = [(index, identity, split, f"{index + 1:06d}.jpg" not in present)
            for index, identity, split in image_jobs(counts, seed)]
    rows = _draw_images(folder / IMAGE_FOLDER, seed, jobs, int(workers), progress)
    _write_annotations(folder, rows)

    # Last: the marker that says "complete". Until it exists, the set counts as unfinished.
    marker = dict(params, name="kata synthetic CelebA", image_size=[WIDTH, HEIGHT], total=total,
                  smiling=sum(row[3][SMILING] == 1 for row in rows),
                  created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), seconds=round(time.time() - started, 1))
    write_json(folder / MARKER_NAME, marker)
    (folder / PARTIAL_NAME).unlink(missing_ok=True)
    return folder
