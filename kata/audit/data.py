"""Records of exercise 2, data: the label, the transforms' pixels, the splits and the loaders.

The faces come from a small synthetic CelebA drawn for the grading run
(``context.celeba``); the other images are drawn here. A training transform's
output is judged as the check judges it: the reference's tensor under the
same seed, or one of the book's 41 crops of the face, flipped or not (the
reference's record lists them), as ``transforms.v2`` draws in another order.
"""

from __future__ import annotations

import inspect
import tempfile
from pathlib import Path

from kata.audit import CONSTANT, PROPERTY, SHAPE, Facet, close, project, tensor_values, typed
from kata.i18n import _, say

__all__ = ["FACETS", "RECORDS"]

PIXELS = 1e-6   # the checks compare pixels to float precision (transforms.v2 differs from ToTensor in the last bit)
FLIPS = 200     # draws of the half-black, half-white image; the check wants 70 to 130 of them flipped


def _faces(ctx):
    from PIL import Image

    folder = ctx.celeba / "celeba" / "img_align_celeba"
    return [Image.open(path).convert("RGB") for path in sorted(folder.iterdir())[:6]]


def _noise(draw):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(draw.seed())
    width, height = draw.int(178, 260), draw.int(178, 260)
    pixels = np.clip(rng.integers(0, 256, size=3) + rng.integers(-40, 41, size=(height, width, 3)), 0, 255)
    return Image.fromarray(pixels.astype(np.uint8), "RGB")


def _under(seed: int, transform, image):
    import torch

    torch.manual_seed(seed)
    return transform(image)


def _smiling(mod, draw, ctx):
    return typed(mod.SMILING)


def _get_smile(mod, draw, ctx):
    import torch

    vectors = [torch.tensor([draw.int(0, 1) for _ in range(40)], dtype=torch.int64) for _ in range(6)]
    return [typed(mod.get_smile(v)) for v in vectors]


def _get_smile_reads(mod, draw, ctx):
    import torch

    return [typed(mod.get_smile(torch.eye(40, dtype=torch.int64)[i])) for i in range(40)]


def _eval_faces(mod, draw, ctx):
    return [typed(mod.eval_transform()(f)) for f in draw.shuffled(_faces(ctx))[:3]]


def _eval_noise(mod, draw, ctx):
    return [typed(mod.eval_transform()(_noise(draw))) for _ in range(3)]


def _eval_seeds(mod, draw, ctx):
    face = draw.choice(_faces(ctx))
    return [typed(_under(draw.seed(), mod.eval_transform(), face)) for _ in range(3)]


def _eval_band(mod, draw, ctx):
    from PIL import Image

    band = Image.new("RGB", (178, 218), "black")
    band.paste((255, 255, 255), (0, 198, 178, 218))
    return [float(_under(draw.seed(), mod.eval_transform(), band).max()) for _ in range(8)]


def _train_seeds(mod, draw, ctx):
    face = draw.choice(_faces(ctx))
    found = {"seeds": [typed(_under(seed, mod.train_transform(), face)) for seed in [draw.seed() for _ in range(6)]]}
    if ctx.reference:   # made in the grader's process only: the book's transform is no answer the sandbox holds
        from kata.checks.book import book_train_candidates

        found["candidates"] = [typed(t) for t in book_train_candidates(face)]
    return found


def _train_noise(mod, draw, ctx):
    return [typed(_under(draw.seed(), mod.train_transform(), _noise(draw))) for _ in range(3)]


def _train_flips(mod, draw, ctx):
    """A half-black, half-white image: after a flip its left half is the brighter (its two halves compared, as the
    check compares them)."""
    import torch
    from PIL import Image

    halves = Image.new("RGB", (178, 218), "black")
    halves.paste((255, 255, 255), (89, 0, 178, 218))
    torch.manual_seed(draw.seed())
    transform = mod.train_transform()
    found = []
    for _flip in range(FLIPS):
        out = transform(halves)
        middle = out.shape[-1] // 2
        found.append(float(out[..., :middle].mean() - out[..., middle:].mean()))   # > 0: bright on the left
    return found


def _swapped(mod, make):
    """Put ``make(kata's CelebA)`` where the learner's module finds kata's CelebA (kata.celeba.CelebA and its
    own names for it); returns the undo."""
    import kata.celeba

    original = kata.celeba.CelebA
    swapped = [(kata.celeba, "CelebA")] + [(mod, k) for k, v in vars(mod).items() if v is original]
    replacement = make(original)
    for owner, name in swapped:
        setattr(owner, name, replacement)
    return lambda: [setattr(owner, name, original) for owner, name in swapped]


def _bound_calls(mod, calls):
    def spy(original):
        class Spy(original):
            def __init__(self, *args, **kwargs):
                bound = inspect.signature(original.__init__).bind(None, *args, **kwargs).arguments
                calls.append({"split": bound.get("split", "train"), "target_type": bound.get("target_type", "attr"),
                              "download": bound.get("download", False),
                              "target_transform": bound.get("target_transform") is not None})
                super().__init__(*args, **kwargs)
        return Spy
    return _swapped(mod, spy)


def _raised(call) -> dict:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - which error, and what it says, is the record
        return {"raised": type(exc).__name__, "message": str(exc)[:500]}
    return {"raised": None, "message": ""}


def _item_kind(x):
    import torch

    if not isinstance(x, torch.Tensor):
        return typed(x, values=False)
    return {"t": "image", "dtype": str(x.dtype), "shape": list(x.shape),
            "in_0_1": bool(x.numel() and 0 <= x.min().item() and x.max().item() <= 1)}


def _sizes(ctx) -> dict[str, int]:
    import kata.celeba

    return {s: len(kata.celeba.CelebA(ctx.celeba, split=s)) for s in ("train", "valid")}


def _splits(mod, draw, ctx):
    sizes = _sizes(ctx)
    n_train, n_valid = draw.int(4, sizes["train"] - 1), draw.int(3, sizes["valid"] - 1)
    calls = []
    undo = _bound_calls(mod, calls)
    try:
        train, valid, test = mod.load_splits(ctx.celeba, n_train=n_train, n_valid=n_valid)
    finally:
        undo()
    found = {"calls": sorted(calls, key=lambda c: c["split"]), "shape": [], "labels": [], "eval_items": [],
             "train_items": []}
    for name, ds in (("train", train), ("valid", valid), ("test", test)):
        base = getattr(ds, "dataset", ds)
        found["shape"].append({"type": type(ds).__name__, "len": len(ds), "split": getattr(base, "split", None),
                               "indices": [int(i) for i in ds.indices] if hasattr(ds, "indices") else None})
        picked = draw.shuffled(range(len(ds)))   # which items are read is drawn: the answers differ each time
        found["labels"].append([typed(ds[i][1]) for i in picked[:3]])
        items = [_under(draw.seed(), ds.__getitem__, i)[0] for i in picked[:2]]
        if name == "train":
            found["train_items"] = [_item_kind(x) for x in items]
        else:
            found["eval_items"] += [typed(x) for x in items]
    return found


def _splits_defaults(mod, draw, ctx):
    """The defaults as declared, and as taken: from splits made to look 20,000 images long."""
    params = inspect.signature(mod.load_splits).parameters
    found = {k: repr(params[k].default) if k in params else None for k in ("n_train", "n_valid")}

    def enlarged(original):
        class Enlarged(original):
            def __len__(self):
                return max(20000, super().__len__())
        return Enlarged

    undo = _swapped(mod, enlarged)
    try:
        train, valid, _ = mod.load_splits(ctx.celeba)
    finally:
        undo()
    return {**found, "taken": [len(train), len(valid)]}


def _splits_refuse(mod, draw, ctx):
    found = []
    for split, n in _sizes(ctx).items():
        asked = {"n_train": 3, "n_valid": 3, f"n_{split}": n + draw.int(1, 3)}
        seen = _raised(lambda asked=asked: mod.load_splits(ctx.celeba, **asked))
        found.append({"raised": seen["raised"], "says_n": str(n) in seen["message"].replace(",", "")})
    return found


def _splits_missing(mod, draw, ctx):
    empty = Path(tempfile.mkdtemp(dir=ctx.tmp))
    seen = _raised(lambda: mod.load_splits(empty, n_train=3, n_valid=3))
    return {"raised": seen["raised"] is not None, "kata_data": "kata data" in seen["message"]}


def _loaded(mod, draw, ctx):
    return mod.load_splits(ctx.celeba, n_train=draw.int(9, 20), n_valid=draw.int(5, 12))


def _loaders_default_batch(mod, draw, ctx):
    return [dl.batch_size for dl in mod.make_loaders(*_loaded(mod, draw, ctx))]


def _loaders_batches(mod, draw, ctx):
    sets = _loaded(mod, draw, ctx)
    made = mod.make_loaders(*sets, batch_size=draw.int(2, 5))
    found = {"tuple": isinstance(made, tuple) and len(made) == 3, "loaders": []}
    for dl, ds in zip(made, sets):
        x, _ = next(iter(dl))
        found["loaders"].append({"type": type(dl).__name__, "batch_size": dl.batch_size, "same": dl.dataset is ds,
                                 "sizes": [len(y) for _, y in dl], "x": list(x.shape)})
    return found


def _loaders_shuffle(mod, draw, ctx):
    import torch

    made = mod.make_loaders(*_loaded(mod, draw, ctx), batch_size=draw.int(2, 5))
    torch.manual_seed(draw.seed())
    passes = [tuple(torch.cat([y for _, y in made[0]]).tolist()) for _ in range(4)]
    orders = len(set(passes))
    sampler = getattr(made[0], "sampler", None)
    if len(set(passes[0])) < 2 and sampler is not None:
        # One label for every image (a wrong label function, on this run's few images): the labels can't show
        # an order, and the training sampler's indices do.
        orders = len({tuple(int(i) for i in sampler) for _ in range(4)})
    return {"samplers": [type(getattr(dl, "sampler", None)).__name__ for dl in made], "orders": orders}


RECORDS = {"smiling": _smiling, "get_smile": _get_smile, "get_smile.reads": _get_smile_reads, "eval.faces": _eval_faces,
           "eval.kind": _eval_noise, "eval.deterministic": _eval_seeds, "eval.band": _eval_band,
           "train.values": _train_seeds, "train.kind": _train_noise, "train.flips": _train_flips, "splits": _splits,
           "splits.defaults": _splits_defaults, "splits.refuse": _splits_refuse, "splits.missing": _splits_missing,
           "loaders.default_batch": _loaders_default_batch, "loaders.batches": _loaders_batches,
           "loaders.shuffle": _loaders_shuffle}


# --- how the records are read --------------------------------------------------------------


def _value(node):
    """A described 0-d value as a number (None when it is not one)."""
    if node.get("t") in ("int", "float", "bool"):
        return float(node["v"])
    if node.get("t") == "tensor" and node.get("shape") == [] and "v" in node:
        return float(tensor_values(node).reshape(-1)[0])
    return None


def _reads(found):
    return [i for i, node in enumerate(found) if _value(node) == 1]


def _kind(node):
    values = tensor_values(node) if node.get("t") == "tensor" else None
    in_range = bool(values is not None and values.size and 0 <= values.min() and values.max() <= 1)
    return {"t": node.get("t"), "dtype": node.get("dtype"), "shape": node.get("shape"), "in_0_1": in_range}


def _pixels_close(mine, ref) -> bool:
    return close(0, PIXELS)(mine, ref) is None


def _train_values(mine, ref):
    if len(mine["seeds"]) != len(ref["seeds"]):
        return _("yours holds another number of images")
    for i, (got, want) in enumerate(zip(mine["seeds"], ref["seeds"])):
        if not (_pixels_close(got, want) or any(_pixels_close(got, c) for c in ref["candidates"])):
            return say("under seed {i}, yours is neither the reference's tensor nor one of the book's crops and flips",
                       i=i)
    return None


def _random(mine, _ref):
    first = mine["seeds"][0]
    return None if any(not _pixels_close(first, other) for other in mine["seeds"][1:]) else \
        _("the same tensor under every seed: nothing random")


def _flips(mine, _ref):
    flips = sum(v > 0 for v in mine)
    return None if len(mine) == FLIPS and 70 <= flips <= 130 else say("flipped {flips} of {n}", flips=flips, n=FLIPS)


def _band(mine, _ref):
    return None if len(mine) == 8 and all(isinstance(v, float) and v < 0.05 for v in mine) else \
        _("the rows a 178x178 centre crop removes show")


def _deterministic(mine, _ref):
    return None if all(_pixels_close(other, mine[0]) for other in mine[1:]) else _("different tensors for one image")


def _shuffles(mine, _ref):
    return None if mine["orders"] > 1 else _("four passes gave the training labels in the same order")


def _kinds(found):
    return [_kind(n) for n in found]


def _key(key):
    return project(lambda found: found[key])


FACETS = {
    "smiling": Facet("SMILING: the index of Smiling", rests=CONSTANT),
    "get_smile": Facet("get_smile(attr) of attribute vectors: attr[31] itself, a 0-d tensor"),
    "get_smile.reads": Facet("which attribute get_smile reads (one-hot vectors)", project(_reads), rests=CONSTANT),
    "eval.faces": Facet("eval_transform's pixels on faces", close(0, PIXELS)),
    "eval.kind": Facet("eval_transform gives 3x64x64 float32 pixels in [0, 1]", project(_kinds), rests=SHAPE),
    "eval.deterministic": Facet("eval_transform is the same under every seed", _deterministic, rests=PROPERTY),
    "eval.band": Facet("eval_transform crops before it resizes", _band, rests=CONSTANT),
    "train.values": Facet("train_transform's pixels: the book's crops and flips", _train_values),
    "compose[train_transform]": Facet("train_transform is the book's Compose: its pixels are the book's",
                                      _train_values, record="train.values"),
    "compose[eval_transform]": Facet("eval_transform is the book's Compose: its pixels are the book's",
                                     close(0, PIXELS), record="eval.faces"),
    "train.random": Facet("train_transform draws anew each time", _random, record="train.values", rests=PROPERTY),
    "train.kind": Facet("train_transform gives 3x64x64 float32 pixels in [0, 1]", project(_kinds), rests=SHAPE),
    "train.flips": Facet("train_transform flips about half of the images", _flips, rests=PROPERTY),
    "splits.shape": Facet("the three splits: Subsets of the first n of train and valid, the whole test",
                          _key("shape"), record="splits", rests=SHAPE),
    "splits.labels": Facet("the splits' labels: the Smiling attribute, 0-d tensors", _key("labels"), record="splits"),
    "splits.eval_items": Facet("the validation and test splits' images",
                               project(lambda f: f["eval_items"], close(0, PIXELS)), record="splits"),
    "splits.train_items": Facet("the training split's images: their kind", _key("train_items"), record="splits",
                                rests=SHAPE),
    "splits.calls": Facet("how load_splits calls kata.celeba.CelebA", _key("calls"), record="splits",
                          rests=CONSTANT),
    "splits.defaults": Facet("load_splits' default sizes", rests=CONSTANT),
    "splits.refuse": Facet("load_splits refuses more images than a split has, saying how many it has",
                           rests=PROPERTY),
    "splits.missing": Facet("load_splits passes on the missing-dataset error", rests=CONSTANT),
    "loaders.default_batch": Facet("make_loaders' default batch size", rests=CONSTANT),
    "loaders.batches": Facet("make_loaders' three DataLoaders and their batches", rests=SHAPE),
    "loaders.samplers": Facet("only the training loader shuffles", _key("samplers"), record="loaders.shuffle",
                              rests=CONSTANT),
    "loaders.shuffles": Facet("the training loader's order changes from pass to pass", _shuffles,
                              record="loaders.shuffle", rests=PROPERTY),
}
