"""Records of exercise 2, data: the label, the transforms' outputs, the splits and the loaders, on the records'
CelebA (the checks' celeba_root). A transform runs under seeds its case names, for the check to run the book's
under them; what the wire does not carry comes back as its class and repr (:func:`shown`)."""

from __future__ import annotations

import contextlib
import inspect
import tempfile

import torch
from PIL import Image
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, Subset
from torchvision.transforms.functional import pil_to_tensor

import kata.celeba
from kata.records import CELEBA, CONSTANT, PROPERTY, SHAPE, WORK, caught, context, record
from kata.records.strategies import attribute_vectors, pil_images
from kata.records.transforms import composes, steps
from kata.records.wire import typed

FACES = CELEBA["n_train"] + CELEBA["n_valid"] + CELEBA["n_test"]   # the faces of the records' CelebA
SIZES = (CELEBA["n_train"], CELEBA["n_valid"])
TRANSFORMS = ("train_transform", "eval_transform")


def shown(x):
    """``x`` as data: as it is where the wire carries it, else its class and repr (a PIL image's pixels too)."""
    if typed(x, values=False)["t"] != "other":
        return x
    return {"class": type(x).__name__, "repr": repr(x), **({"pixels": pil_to_tensor(x)} if isinstance(
        x, Image.Image) else {})}


def face(index: int):
    return Image.open(sorted((context().celeba / "celeba" / "img_align_celeba").iterdir())[index]).convert("RGB")


def picture(box: tuple[int, int, int, int]):
    image = Image.new("RGB", (178, 218), "black")
    image.paste((255, 255, 255), box)
    return image


def run(transform, image, seed: int):
    torch.manual_seed(seed)
    return shown(transform(image))


@contextlib.contextmanager
def celeba_as(data, make):
    """``make(CelebA)`` where load_splits finds kata's CelebA (kata.celeba.CelebA, its module's names), a while."""
    original, names = kata.celeba.CelebA, getattr(data.load_splits, "__globals__", {})
    places = [(vars(kata.celeba), "CelebA")] + [(names, k) for k, v in list(names.items()) if v is original]
    made = make(original)
    for owner, name in places:
        owner[name] = made
    try:
        yield
    finally:
        for owner, name in places:
            owner[name] = original


@record(lambda draw: ["SMILING", "reads", *draw.examples(attribute_vectors())], rests=(CONSTANT, WORK))
def label(data, part):
    """SMILING; get_smile of each one-hot vector of 40; get_smile of a drawn attribute vector"""
    if isinstance(part, str):
        return shown(data.SMILING) if part == "SMILING" else [shown(data.get_smile(row)) for row in torch.eye(
            40, dtype=torch.int64)]
    return shown(data.get_smile(part))


@record(lambda draw: [*TRANSFORMS, *((which, image, draw.seed()) for which in TRANSFORMS
                                     for image in draw.examples(pil_images()))], rests=(CONSTANT, SHAPE))
def transforms(data, which, image=None, seed=0):
    """train_transform() or eval_transform(): its steps as the book would write them, or what it is; or what it
    gives of a drawn image under a drawn seed"""
    transform = getattr(data, which)()
    if image is not None:
        return run(transform, image, seed)
    return {"steps": steps(transform)} if isinstance(transform, composes()) else {"value": shown(transform)}


@record(lambda draw: [(tuple(draw.shuffled(range(FACES))[:3]), draw.int(0, FACES - 1), tuple(
        draw.seed() for _ in range(5)))], rests=(WORK, PROPERTY, CONSTANT))
def evals(data, faces, index, seeds):
    """eval_transform() of three faces; of one under four drawn seeds; under the fifth, 8 times of a black
    178x218 picture, white in the 20 rows a 178x178 centre crop cuts off"""
    return {"faces": [shown(data.eval_transform()(face(i))) for i in faces],
            "seeds": [run(data.eval_transform(), face(index), seed) for seed in seeds[:4]],
            "band": [run(data.eval_transform(), picture((0, 198, 178, 218)), seeds[4] + i) for i in range(8)]}


@record(lambda draw: [(draw.int(0, FACES - 1), draw.seed())], rests=(WORK, PROPERTY))
def train_seeds(data, index, seed):
    """train_transform() of a face under torch.manual_seed(0) to (7), and its steps; under a drawn seed, of a picture
    black on the left, white on the right: its first output, and how many of the next 200 are brighter on the left"""
    transform = data.train_transform()
    found = {"outs": [run(transform, face(index), s) for s in range(8)], "steps": steps(transform), "flips": None}
    transform, image = data.train_transform(), picture((89, 0, 178, 218))
    found["first"] = run(transform, image, seed)
    if isinstance(found["first"], torch.Tensor):
        outs = (transform(image).float() for _round in range(200))
        found["flips"] = sum(bool(o[..., :o.shape[-1] // 2].mean() > o[..., o.shape[-1] - o.shape[-1] // 2:].mean())
                             for o in outs)
    return found


@record(lambda draw: [(draw.int(8, 20), draw.int(4, 8), draw.int(0, FACES - 1), tuple(draw.seed() for _ in range(3)))],
        rests=(WORK, SHAPE, CONSTANT))
def splits(data, n_train, n_valid, index, seeds):
    """load_splits(root, n_train, n_valid), kata.celeba.CelebA spied on: the arguments of each CelebA it made; each
    split's kind, size, indices, first 4 labels and files, first image, its transform of a face under three seeds"""
    calls, found = [], []

    def spy(original):
        def init(self, *args, **kwargs):
            calls.append(inspect.signature(original.__init__).bind(None, *args, **kwargs).arguments)
            original.__init__(self, *args, **kwargs)
        return type("CelebA", (original,), {"__init__": init})

    with celeba_as(data, spy):
        train, valid, test = data.load_splits(context().celeba, n_train=n_train, n_valid=n_valid)
    for ds in (train, valid, test):
        sub = isinstance(ds, Subset)
        base = ds.dataset if sub else ds
        found.append({"kind": type(ds).__name__, "subset": sub, "len": len(ds), "split": shown(getattr(
            base, "split", "?")), "indices": [int(i) for i in getattr(ds, "indices", range(len(ds)))],
            "labels": [shown(ds[i][1]) for i in range(4)],
            "files": [base.filename[int(ds.indices[i]) if sub else i] for i in range(4)], "x": shown(ds[0][0]),
            "outs": None if base.transform is None else [run(base.transform, face(index), seed) for seed in seeds],
            "steps": steps(base.transform)})
    return {"sets": found, "calls": [
        {"split": shown(b.get("split", "train")), "target_type": shown(b.get("target_type", "attr")),
         "download": shown(b.get("download", False)), "target_transform": b.get("target_transform") is not None}
        for b in calls]}


@record(lambda draw: ["declared", "taken", (SIZES[0] + draw.int(1, 3), 4), (8, SIZES[1] + draw.int(1, 3)), SIZES,
                      (8, 4, "missing")], rests=(CONSTANT, PROPERTY))
def asked(data, *args):
    """load_splits' defaults, as declared; as taken, where each split seems 20,000 images long; what it raised (None:
    nothing), asked for more images than a split has or of no CelebA; the sizes of train and valid, asked for all"""
    if args == ("declared",):
        params = inspect.signature(data.load_splits).parameters
        return {name: shown(p.default) for name, p in params.items() if name in ("n_train", "n_valid")}
    if args == ("taken",):
        with celeba_as(data, lambda original: type("CelebA", (original,), {
                "__len__": lambda self: max(20000, original.__len__(self))})):
            train, valid, _test = data.load_splits(context().celeba)
        return [len(train), len(valid)]
    if args == SIZES:
        train, valid, _test = data.load_splits(context().celeba, n_train=args[0], n_valid=args[1])
        return [len(train), len(valid)]
    call = data.load_splits   # a name the module lacks is no answer: TargetError, raised on
    try:
        call(tempfile.mkdtemp(dir=context().tmp) if args[2:] else context().celeba, n_train=args[0],
             n_valid=args[1])
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - the error, whole, is the answer
        # the refusal the contract asks for (CelebA's of no CelebA, load_splits' of too many), or an error of its own
        expected = type(exc).__name__ == ("DatasetNotFoundError" if args[2:] else "ValueError")
        return {"kind": type(exc).__name__, "text": str(exc)} if expected else caught(exc, data)
    return None


@record(lambda draw: [(8, 4, "default"), (20, SIZES[1], "batches"), (24, SIZES[1], "shuffle", draw.seed())],
        rests=(CONSTANT, SHAPE, PROPERTY))
def loaders(data, n_train, n_valid, part, seed=0):
    """make_loaders of the splits: its batch size left to its default, each loader's; batch_size=8, each loader's
    kind, batch size, dataset and batches, or its samplers, first label and orders of four passes under a seed"""
    _train, _valid, _test = sets = data.load_splits(context().celeba, n_train=n_train, n_valid=n_valid)
    if part == "default":
        return [shown(dl.batch_size) for dl in data.make_loaders(*sets)]
    made, found = data.make_loaders(*sets, batch_size=8), []
    if part == "shuffle":
        samplers = {"random": isinstance(made[0].sampler, RandomSampler),
                    "sequential": [isinstance(dl.sampler, SequentialSampler) for dl in made[1:]]}
        _x, y = next(iter(made[0]))
        torch.manual_seed(seed)
        return {**samplers, "label": [shown(y[0])] if len(y) else [],
                "orders": len({tuple(torch.cat([y for _, y in made[0]]).reshape(-1).tolist()) for _ in range(4)})}
    if not (isinstance(made, tuple) and len(made) == 3):
        return None
    for dl, ds in zip(made, sets):
        found.append({"kind": type(dl).__name__, "loader": isinstance(dl, DataLoader), "n": len(ds),
                      "batch_size": shown(getattr(dl, "batch_size", None)), "same": getattr(dl, "dataset", 0) is ds})
        if not (found[-1]["loader"] and found[-1]["batch_size"] == 8 and found[-1]["same"]):
            break
        x, y = next(iter(dl))
        found[-1].update(sizes=[len(y) for _, y in dl], first=[len(x), len(y)], x=shown(x[0]))
    return found
