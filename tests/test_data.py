"""Checks for exercise 2, data: CelebA smiles.

The book (chapter 14) labels each face with attribute 31 (Smiling), augments training images with a random crop
and flip, crops validation and test images in the centre, shrinks everything to 64x64, takes the first 16,000
training and 1,000 validation images, and batches them by 32, shuffling only the training set. Each check reads
the answers of a record (records/data.py: the learner's pipeline, run on a small synthetic CelebA). Transforms
are compared by what they do, never by their text (`Resize(64)` after a 178x178 crop is `Resize([64, 64])`), and
transforms.v2's `ToImage()` and `ToDtype(torch.float32, scale=True)` are `ToTensor()` (pixels to float precision).

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import math
import re

import pytest
import torch
from PIL import Image
from torchvision import transforms as T

from kata.celeba import ATTRIBUTE_NAMES
from kata.checks import lessons
from kata.checks.book import book_eval_transform, book_train_candidates, book_train_transform
from kata.checks.messages import describe, fail_if, premise_first
from kata.i18n import N_, _, say
from kata.records import CELEBA
from kata.records.transforms import steps

BOOK = {"train_transform": book_train_transform(), "eval_transform": book_eval_transform()}
SPLITS = ("train", "valid", "test")
SIZES = {"train": CELEBA["n_train"], "valid": CELEBA["n_valid"]}   # the records' CelebA's (celeba_root's)


def same_pixels(got, want) -> bool:
    """The same image tensor, to float precision (v2's ToDtype scales by 1/255, ToTensor divides by 255)."""
    return (isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype == want.dtype
            and torch.allclose(got, want, rtol=0, atol=1e-6))


def face(celeba_root, index) -> Image.Image:
    folder = celeba_root / "celeba" / "img_align_celeba"
    return Image.open(sorted(folder.iterdir())[index]).convert("RGB")


def made(value):
    """A value as a record sent it: one the wire does not carry stands for itself by its class and repr."""
    if isinstance(value, dict) and "repr" in value:
        return type(value["class"], (), {"__repr__": lambda self: value["repr"]})()
    return value


def run(transform, image, seed):
    torch.manual_seed(seed)
    return transform(image)


# --- the label ------------------------------------------------------------


WRONG_ATTRIBUTE = N_("the label is the wrong attribute: 'Smiling' is attribute 31 of CelebA's 40 (the book's first "
                     "printing used 18, Heavy_Makeup, and its errata corrects it to 31), so the model would learn "
                     "something else")
READS = N_("{wrong}\n  probed with one-hot vectors, get_smile reads attribute {read}: return attr[31]")
SMILING_IS = N_("{wrong}\n  SMILING is {value}")
ONE_ATTRIBUTE = N_("get_smile must return one attribute of the vector, a 0-d tensor: the entry SMILING names, not a "
                   "slice or the whole vector\n  get_smile(attr) returned {value}")


def named(index) -> str:
    return (f"{index} ({ATTRIBUTE_NAMES[index]})" if isinstance(index, int) and 0 <= index < 40
            else describe(made(index)))


def wrong_reads(data) -> str | None:
    """READS when get_smile, probed with one-hot vectors, reads another attribute than 31 (a probe that gives more
    than one number fails the check with ONE_ATTRIBUTE)."""
    labels = data.cases("label")[1].answer
    for label in labels:
        if not ((isinstance(label, (int, float)) and not isinstance(label, bool)) or (
                isinstance(label, torch.Tensor) and label.dim() == 0)):
            pytest.fail(say(ONE_ATTRIBUTE, value=describe(made(label))), pytrace=False)
    read = [i for i, label in enumerate(labels) if int(label) == 1]
    return None if read == [31] else say(READS, wrong=_(WRONG_ATTRIBUTE),
                                         read=", ".join(named(i) for i in read) or _("none"))


def test_smiling_is_attribute_31(data):
    smiling = made(data.cases("label")[0].answer)
    if smiling != 31:
        fail_if(say(SMILING_IS, wrong=_(WRONG_ATTRIBUTE), value=named(smiling)))


def test_get_smile_reads_attribute_31(data):
    fail_if(wrong_reads(data))


def label_problem(label, attr) -> str | None:
    """Why ``label`` is not the book's label for ``attr`` (its Smiling entry as it is): one first line, anywhere."""
    if not isinstance(label, torch.Tensor):
        return say("{lesson}\n  the label is {value}", lesson=_(lessons.LABEL_NOT_A_TENSOR),
                   value=describe(made(label)))
    if label.shape != ():
        return say(ONE_ATTRIBUTE, value=describe(label))
    if label.dtype != attr.dtype:
        return say("{lesson}\n  the label is {value} of dtype {dtype}", lesson=_(lessons.LABEL_WRONG_DTYPE),
                   value=describe(label), dtype=label.dtype)
    return None


def test_get_smile_returns_the_smiling_attribute(data):
    for case in data.cases("label")[2:]:
        (attr,), label = case.args, case.answer
        if label_problem(label, attr) is None and torch.equal(label, attr[31]):
            continue
        fail_if(wrong_reads(data))
        fail_if(label_problem(label, attr))
        fail_if(say("get_smile(attr) must equal attr[31]\n  for {attr} it returned {value}, attr[31] is {smiling}",
                    attr=attr.tolist(), value=describe(made(label)), smiling=int(attr[31])))


# --- the transforms -------------------------------------------------------

# Each step of the book's Compose has a role, and each role a rule the checks of what a transform gives hold it to.
# Where a transform's steps (as the book would write them: kata.records.transforms.steps) differ from the book's,
# that difference is why it gives other tensors (the same steps give the same tensors), so every check that sees a
# consequence fails first with the rule of the book's first step that differs (PIPELINE: one first line whichever
# check saw it, and whichever transform; the step and both Composes on the next lines).
COMPOSE = N_("a transform must be the book's Compose: the same steps, in the same order, with the same sizes")
SHAPE = N_("a transform must give a 3x64x64 image: crop to 178x178 first, then Resize([64, 64]) (on a square, "
           "Resize(64) is the same; on the 178x218 face it keeps the aspect ratio)")
TENSOR = N_("a transform must end with transforms.ToTensor(), so the model gets a tensor")
FLOAT = N_("a transform must give float32 pixels, as ToTensor() makes them")
SCALED = N_("a transform must give pixels in [0, 1], as ToTensor() scales them")
# float32 rounding past [0, 1] (a float tensor resized: 1.0000002) is no scaling mistake: the pixel checks say what
# it is, and the images a random crop picks decide whether it shows, so a rule on it would not hold for every draw.
ROUNDING = 1e-6
FLIP = N_("the training transform flips half of the images: RandomHorizontalFlip() (p=0.5, its default) — a smile "
          "is still a smile in a mirror")
AUGMENT = N_("the training transform augments: a random crop and a random horizontal flip each time an image is "
             "loaded, so the model never sees quite the same face twice")
NOT_RANDOM = N_("validation and test images must not be randomised (no RandomCrop or RandomHorizontalFlip there), "
                "or the scores can't be compared")
PIPELINE = N_("{lesson}\n  {difference}\n  yours:  Compose([{yours}])\n  book's: Compose([{books}])")
HAS_NO = N_("{which} has no {step}")
HAS_OTHER = N_("{which} has {yours} where the book has {books}")
HAS_EXTRA = N_("{which} has {step}, which the book's Compose has not")
HAS_BEFORE = N_("{which} has {early} before {late}; the book's Compose has them the other way round")

SIZED = re.compile(r"\((\[\d+, \d+\]|\d+)")   # a step's size, its first argument
RULES = {"crop": SHAPE, "Resize": SHAPE, "RandomHorizontalFlip": FLIP}   # each step's rule (ToTensor's: below)


def role(step: str) -> str:
    """What a step is for: the crop (either kind), else its class."""
    kind = step.split("(", 1)[0]
    return "crop" if kind in ("RandomCrop", "CenterCrop") else kind


def size_of(step: str) -> str | None:
    """A crop's or a Resize's size as written in its step, or None."""
    return match.group(1) if (match := SIZED.match(step[len(step.split("(", 1)[0]):])) else None


def first_difference(which: str, got: list[str], want: list[str]) -> tuple[str, str]:
    """(the rule, the difference) of the book's first step that ``got`` lacks or changes; else of the first step it
    adds; else (the book's steps in another order) of the first step out of place."""
    roles, random_book = {role(w) for w in want}, any(w.startswith("Random") for w in want)
    for step in want:
        mine = [s for s in got if role(s) == role(step)]
        if not mine and step == "ToTensor()":
            extra = [s for s in got if role(s) not in roles]
            return (FLOAT, say(HAS_OTHER, which=which, yours=extra[-1], books=step)) if extra else (
                TENSOR, say(HAS_NO, which=which, step=step))
        if not mine:
            return RULES.get(role(step), COMPOSE), say(HAS_NO, which=which, step=step)
        if mine[0] != step:
            if mine[0].startswith("Random") and not random_book:
                lesson = NOT_RANDOM
            elif step.startswith("Random") and not mine[0].startswith("Random"):
                lesson = AUGMENT if role(step) == "crop" else FLIP
            elif role(step) == "RandomHorizontalFlip" or size_of(mine[0]) != size_of(step):
                lesson = RULES[role(step)]   # the flip's probability, a crop's or a Resize's size
            else:
                lesson = COMPOSE             # a setting that differs: interpolation, padding, ...
            return lesson, say(HAS_OTHER, which=which, yours=mine[0], books=step)
    for i, step in enumerate(got):
        if role(step) not in roles or any(role(s) == role(step) for s in got[:i]):
            lesson = NOT_RANDOM if step.startswith("Random") and not random_book else COMPOSE
            return lesson, say(HAS_EXTRA, which=which, step=step)
    # got is the book's steps in another order
    early, late = next((g, w) for g, w in zip(got, want) if g != w)
    lesson = SHAPE if {role(early), role(late)} == {"crop", "Resize"} else COMPOSE
    return lesson, say(HAS_BEFORE, which=which, early=early, late=late)


TENSOR_BEFORE_RESIZE = N_(
    "{which} has the book's steps in another order: ToTensor() comes before {late}, so Resize works on a float "
    "tensor instead of the PIL image, and the pixels differ from the book's. On a PIL image Resize interpolates the "
    "8-bit pixels and rounds each to a whole level (k/255 after ToTensor); on a float tensor it interpolates in "
    "float32 (bilinear, antialiased) and keeps the fractions: pixels up to about 1/255 away from the book's, and a "
    "white one a hair above 1.0. The book crops, flips and resizes the PIL image, and calls ToTensor() last\n"
    "  yours:  Compose([{yours}])\n  book's: Compose([{books}])")


def pipeline_problem(got, book: str, which: str = "") -> str | None:
    """PIPELINE where ``got``, the steps of a transform (named ``which``, else ``book()``), differ from those of the
    book's ``book`` (None: the same steps, or no Compose to compare: then a check's own rule says what it sees);
    TENSOR_BEFORE_RESIZE where they are the book's steps, a Resize after ToTensor() (only then: another order of the
    book's steps gives the book's pixels, or fails on its own first line)."""
    which, want = which or f"{book}()", steps(BOOK[book])
    if not isinstance(got, list) or got == want:
        return None
    yours, books = ", ".join(got), ", ".join(want)
    late = got[got.index("ToTensor()") + 1:] if sorted(got) == sorted(want) else []
    if any(step.startswith("Resize(") for step in late):
        return say(TENSOR_BEFORE_RESIZE, which=which, late=", ".join(late), yours=yours, books=books)
    lesson, difference = first_difference(which, got, want)
    return say(PIPELINE, lesson=_(lesson), difference=difference, yours=yours, books=books)


def learners_steps(data, which: str):
    """The steps of the learner's ``which`` (train_transform or eval_transform), or None (no Compose, or it raised)."""
    (case,) = [case for case in data.cases("transforms") if case.args == (which,)]
    return None if case.raised is not None else case.answer.get("steps")


def learners_problem(data, which: str) -> str | None:
    return pipeline_problem(learners_steps(data, which), which)


@pytest.mark.parametrize("which", BOOK)
def test_transform_is_the_books_compose(data, which):
    found = data.answer("transforms", which)
    assert "steps" in found, say("{which}() must return one transforms.Compose([...]) chaining the book's steps\n"
                                 "  it returned {value}", which=which, value=describe(made(found.get("value"))))
    fail_if(pipeline_problem(found["steps"], which))


def kinds_of(data, which):
    for case in [case for case in data.cases("transforms")[2:] if case.args[0] == which]:
        check_tensor_image(case.answer, which, lambda: learners_problem(data, which))


def test_train_transform_gives_a_3x64x64_float_tensor_in_0_1(data):
    kinds_of(data, "train_transform")


def test_eval_transform_gives_a_3x64x64_float_tensor_in_0_1(data):
    kinds_of(data, "eval_transform")


def check_tensor_image(out, which, problem=None):
    """A transform's output is a 3x64x64 float32 tensor in [0, 1]; where it is not, ``problem`` (the transform's
    :func:`pipeline_problem`, or a function that gives it, asked only then), when there is one, is the cause said,
    else the first rule ``out`` breaks."""
    __tracebackhide__ = True
    if not isinstance(out, torch.Tensor):
        wrong = say("{lesson}\n  {which} returned {value}", lesson=_(TENSOR), which=which, value=describe(made(out)))
    elif out.shape != (3, 64, 64):
        wrong = say("{lesson}\n  {which} gave shape {shape}", lesson=_(SHAPE), which=which, shape=tuple(out.shape))
    elif out.dtype != torch.float32:
        wrong = say("{lesson}\n  {which} gave dtype {dtype}", lesson=_(FLOAT), which=which, dtype=out.dtype)
    elif not (-ROUNDING <= out.min().item() and out.max().item() <= 1.0 + ROUNDING):
        wrong = say("{lesson}\n  {which} gave values from {low} to {high}", lesson=_(SCALED), which=which,
                    low=out.min().item(), high=out.max().item())
    else:
        return
    fail_if(problem() if callable(problem) else problem)
    fail_if(wrong)


def test_eval_transform_matches_the_book_exactly(data, celeba_root):
    for index, got in zip((case := data.cases("evals")[0]).args[0], case.answer["faces"]):
        image = face(celeba_root, index)
        if same_pixels(got, BOOK["eval_transform"](image)):
            continue
        fail_if(learners_problem(data, "eval_transform"))
        resized_first = T.Compose([T.Resize([64, 64]), T.CenterCrop([178, 178]), T.ToTensor()])(image)
        assert not same_pixels(got, resized_first), _(
            "eval_transform resizes before it crops: the 178x218 face is squashed to 64x64 and then "
            "padded. CenterCrop([178, 178]) must come first, then Resize([64, 64])")
        check_tensor_image(got, "eval_transform")
        fail_if(_("eval_transform(image) differs from the book's Compose([CenterCrop([178, 178]), Resize([64, 64]), "
                  "ToTensor()]) on a 178x218 face"))


def test_eval_transform_is_deterministic(data):
    outs = [pixels(out) for out in data.cases("evals")[0].answer["seeds"]]
    if not all(torch.equal(outs[0], o) for o in outs[1:]):
        fail_if(learners_problem(data, "eval_transform"))
        fail_if(say("{lesson}\n  eval_transform gave different tensors for the same image", lesson=_(NOT_RANDOM)))


def like_the_books_train_transform(outs, transform_steps, image, seeds) -> bool:
    """The book's tensor under each seed, or (its steps, drawn in transforms.v2's order) one of its crops and flips."""
    if all(same_pixels(got, run(BOOK["train_transform"], image, seed)) for got, seed in zip(outs, seeds)):
        return True
    if transform_steps != steps(BOOK["train_transform"]):
        return False
    possible = book_train_candidates(image)
    return all(any(same_pixels(got, want) for want in possible) for got in outs)


def test_train_transform_matches_the_book_under_the_same_seed(data, celeba_root):
    found = (case := data.cases("train_seeds")[0]).answer
    problem = pipeline_problem(found["steps"], "train_transform")
    check_tensor_image(found["outs"][0], "train_transform", problem)
    same = like_the_books_train_transform(found["outs"][:6], found["steps"], face(celeba_root, case.args[0]), range(6))
    with premise_first(lambda: problem):
        assert same, _(
            "under torch.manual_seed(0) to (5), train_transform(image) differs from the book's "
            "Compose([RandomCrop([178, 178]), RandomHorizontalFlip(), Resize([64, 64]), ToTensor()]): "
            "same steps, same order, same sizes, default flip probability 0.5")


def test_train_transform_is_random(data):
    found = data.cases("train_seeds")[0].answer
    outs = [pixels(out) for out in found["outs"]]
    if all(torch.equal(outs[0], o) for o in outs[1:]):
        fail_if(pipeline_problem(found["steps"], "train_transform"))
        fail_if(say("{lesson}\n  train_transform gave the same tensor 8 times for one image", lesson=_(AUGMENT)))


def pixels(out) -> torch.Tensor:
    """A transform's output (a PIL image's pixels, a uint8 tensor, ...) as a float tensor of its pixels in [0, 1]."""
    out = out["pixels"] if isinstance(out, dict) and "pixels" in out else out
    assert isinstance(out, torch.Tensor), say("a transform must give an image (a tensor: the model gets tensors)\n"
                                              "  it gave {value}", value=describe(made(out)))
    return out.float() / 255 if not out.is_floating_point() else out.float()


def test_train_transform_flips_about_half_the_time(data):
    # Left half black, right half white: after a flip, the left half is the brighter one.
    found = data.cases("train_seeds")[0].answer
    problem = pipeline_problem(found["steps"], "train_transform")
    check_tensor_image(found["first"], "train_transform", problem)   # the form first: a 3x64x64 float image
    flips = found["flips"]
    if not 70 <= flips <= 130:
        fail_if(problem)
        fail_if(say("{lesson}\n  it flipped {flips} of 200 images", lesson=_(FLIP), flips=flips))


def test_crop_happens_before_resize(data):
    # A white band in the 20 rows CenterCrop(178) cuts off: cropped first, it is gone; resized first, it shows.
    out = torch.stack([pixels(out) for out in data.cases("evals")[0].answer["band"]])
    with premise_first(lambda: learners_problem(data, "eval_transform")):
        assert out.max().item() < 0.05, _(
            "eval_transform kept the bottom rows that a 178x178 centre crop removes: crop first "
            "(CenterCrop([178, 178])), then Resize([64, 64]), so a 178x218 face keeps its proportions")


# --- the splits -----------------------------------------------------------


REFUSE_EXACT = N_("load_splits refuses only MORE images than a split has: asked for exactly as many as a split holds, "
                  "it gives them all (n <= len(split) is fine)\n  {call} on splits of {sizes} images raised "
                  "ValueError({error!r})")
REFUSE_FEWER = N_("load_splits raised ValueError for images a split has: it refuses only more than a split holds\n"
                  "  {call} on splits of {sizes} images raised ValueError({error!r})")


def unknown_split(error: str) -> str | None:
    """CelebA's refusal of a split name (torchvision's verify_str_arg), which is no refusal of a size: its lesson."""
    if "for argument split" not in error:
        return None
    return say("load_splits asked CelebA for a split it does not have: CelebA's splits are 'train', 'valid', 'test' "
               "and 'all' (the book's validation split is 'valid')\n  CelebA raised ValueError({error!r})", error=error)


def torchvision_problem(kind: str, error: str) -> str | None:
    """What load_splits' error (its ``kind`` and text) says of torchvision's CelebA taken for the kata's (its md5
    check, or the book's download=True, met before any other rule), or None. A record that asks load_splits for more
    images than a split has, or of no CelebA, meets the same error: it is the cause there too."""
    if kind == "RuntimeError" and "gdown" in error:
        return say("load_splits asked CelebA to download (download=True): the kata never downloads, the data is "
                   "already on disk (the book passes download=False), and torchvision's md5 check rejects the "
                   "kata's synthetic CelebA and turns to Google Drive. Load each split with `from kata.celeba "
                   "import CelebA` and download=False.\n  ({error})", error=error)
    if kind == "RuntimeError" and "Dataset not found or corrupted" in error:
        return say("load_splits used torchvision.datasets.CelebA, whose md5 check rejects the kata's "
                   "synthetic CelebA: load it with `from kata.celeba import CelebA` (same signature, "
                   "real CelebA loads exactly as in torchvision).\n  ({error})", error=error)
    return None


def load(data, case, sizes=SIZES):
    """The answer of a case whose record called load_splits(root, n_train, n_valid) (its first inputs; other
    ``sizes``: load_splits(root)), with torchvision's checksum refusal, a refusal the split can meet, and an
    IndexError of subsets that hold other items than the first n (past the end of their split) explained."""
    __tracebackhide__ = True
    err = case.raised
    if err is not None:
        fail_if(torchvision_problem(type(err).__name__, str(err)))
    if isinstance(err, IndexError) and (splits := data.cases("splits")[0]).raised is None:
        for name, n, one in zip(("train", "valid"), splits.args, splits.answer["sets"]):
            fail_if(first_items_problem(one["indices"], n, name))
    if isinstance(err, ValueError):
        fail_if(unknown_split(str(err)))
        kwargs = dict(zip(("n_train", "n_valid"), case.args[:2])) if sizes is SIZES else {}
        asked = {"train": kwargs.get("n_train", 16000), "valid": kwargs.get("n_valid", 1000)}
        if all(asked[s] <= sizes[s] for s in sizes):
            call = f"load_splits(root, {', '.join(f'{k}={v}' for k, v in kwargs.items())})"
            shown = say("{train} (train) and {valid} (valid)", train=sizes["train"], valid=sizes["valid"])
            exact = any(asked[s] == sizes[s] for s in sizes)
            fail_if(say(REFUSE_EXACT if exact else REFUSE_FEWER, call=call, sizes=shown, error=str(err)))
    return case.answer


def test_load_splits_defaults_are_the_books(data):
    defaults = {name: made(value) for name, value in data.cases("asked")[0].answer.items()}
    assert defaults == {"n_train": 16000, "n_valid": 1000}, say(
        "load_splits must take the book's first 16,000 training and 1,000 validation images by default: "
        "def load_splits(root, n_train=16000, n_valid=1000)\n  its defaults are {defaults}", defaults=defaults)
    # The small set has fewer images: each split is made to look big enough, so the defaults can be taken.
    train, valid = load(data, data.cases("asked")[1], {"train": 20000, "valid": 20000})
    sizes = {"train": train, "valid": valid}
    assert sizes == {"train": 16000, "valid": 1000}, say(
        "load_splits(root) must give the first 16,000 training and 1,000 validation images, using its "
        "defaults\n  from splits of {enlarged} images each it gave {sizes}", enlarged=20000, sizes=sizes)


def test_load_splits_calls_celeba_as_the_book_does(data):
    calls = load(data, data.cases("splits")[0])["calls"]
    assert calls, _("load_splits never created a kata.celeba.CelebA: load each split with `CelebA(root, split=...)`")
    splits = sorted(b["split"] for b in calls)
    assert splits == ["test", "train", "valid"], say(
        "load_splits loaded the splits {splits}; the book loads 'train', 'valid' and 'test', one each", splits=splits)
    for b in calls:
        assert b["target_type"] == "attr", say(
            "split {split!r} was loaded with target_type={value!r}; the labels come from the 40 "
            "attributes: target_type='attr'", split=b["split"], value=made(b["target_type"]))
        assert b["download"] is False, say(
            "split {split!r} was loaded with download={value!r}: the book passes download=False "
            "(the data must already be on disk)", split=b["split"], value=made(b["download"]))
        if not b["target_transform"]:
            fail_if(say("{lesson}\n  split {split!r} was loaded with no target_transform", lesson=_(ALL_ATTRIBUTES),
                        split=b["split"]))


def the_splits(data, *checked):
    """The case of the record ``splits``, its answer, and FIRST_ITEMS failing the check first (for ``checked``)."""
    (case,) = data.cases("splits")
    found = load(data, case)["sets"]
    for name, n, one in zip(checked, case.args, found):
        fail_if(first_items_problem(one["indices"], n, name))
    return case, found


def test_load_splits_sizes_and_first_items(data):
    case, found = the_splits(data)
    for name, one, n in zip(SPLITS, found, case.args[:2]):
        assert one["subset"], say("the {name} set is a {kind}; the book takes the first n images with "
                                  "torch.utils.data.Subset(ds, torch.arange(n))", name=name, kind=one["kind"])
        assert one["len"] == n, say("the {name} set has {size} images, asked for the first {n}", name=name,
                                    size=one["len"], n=n)
        fail_if(first_items_problem(one["indices"], n, name))
        assert one["split"] == name, say("the {name} subset is drawn from the {split!r} split", name=name,
                                         split=made(one["split"]))
    whole = CELEBA["n_test"]
    assert not found[2]["subset"] and found[2]["len"] == whole, say(
        "the test set has {size} images, the whole test split has {whole}: return it whole", size=found[2]["len"],
        whole=whole)
    assert found[2]["split"] == "test", _("the third dataset returned must be the 'test' split")


FIRST_ITEMS = N_("the train and valid subsets hold the FIRST n images of their split, in order: torch.arange(n), "
                 "not a random choice\n  the {name} subset holds items {items}; it should be 0 to {last}")


def first_items_problem(indices, n, name) -> str | None:
    return None if indices == list(range(n)) else say(FIRST_ITEMS, name=name, items=indices[:12], last=n - 1)


ALL_ATTRIBUTES = N_("each label is the Smiling attribute: pass target_transform=get_smile, or the label is all 40 "
                    "attributes")


def item_label_problem(data, label, what) -> str | None:
    """Why a dataset's (or a loader's) label is not the book's, or None; the same first lines as get_smile's, and
    get_smile's own problem first where it has one (the labels are what it gives)."""
    if isinstance(label, torch.Tensor) and label.shape == (40,):
        problem = say("{lesson}\n  {what} is {value}", lesson=_(ALL_ATTRIBUTES), what=what, value=describe(label))
    else:
        problem = label_problem(label, torch.zeros(40, dtype=torch.int64))
    if problem is not None:
        fail_if(wrong_reads(data))
    return problem


def test_load_splits_labels_are_the_smiling_attribute(data, celeba_root):
    # Read the labels straight from the attribute file, independently of torchvision.
    lines = (celeba_root / "celeba" / "list_attr_celeba.txt").read_text().splitlines()
    column = lines[1].split().index("Smiling")
    smiling = {row.split()[0]: int(row.split()[1 + column]) == 1 for row in lines[2:]}
    _case, found = the_splits(data, "train", "valid")
    for name, one in zip(SPLITS, found):
        for i, (label, filename) in enumerate(zip(one["labels"], one["files"])):
            fail_if(item_label_problem(data, label, say("{name}[{index}]'s label", name=name, index=i)))
            if bool(label) != smiling[filename]:
                fail_if(wrong_reads(data))   # not premise_first: an error get_smile raises stays this check's error
            assert bool(label) == smiling[filename], say(
                "{name}[{index}] ({filename}) is labelled {label}, but its Smiling attribute is {smiling}: the "
                "target_transform must pick attribute 31", name=name, index=i, filename=filename,
                label=int(label), smiling=int(smiling[filename]))


def splits_problem(data, index: int) -> str | None:
    """:func:`pipeline_problem` of the transform of split ``index`` (of the record ``splits``), named as the learner's
    function it is; None where the record raised, the split has no transform, or it has the learner's other
    transform (the split's own rule says so)."""
    (case,) = data.cases("splits")
    if case.raised is not None or (one := case.answer["sets"][index])["outs"] is None:
        return None
    which, other = ("train_transform", "eval_transform") if index == 0 else ("eval_transform", "train_transform")
    if one["steps"] == learners_steps(data, which):
        return learners_problem(data, which)
    if one["steps"] == learners_steps(data, other):
        return None
    return pipeline_problem(one["steps"], which, say("the {name} split's transform", name=SPLITS[index]))


def test_load_splits_augments_only_the_training_split(data, celeba_root):
    case, found = the_splits(data, "train", "valid")
    for i, (name, one) in enumerate(zip(SPLITS, found)):
        check_tensor_image(one["x"], say("the {name} split's transform", name=name),
                           lambda i=i: splits_problem(data, i))
    image, seeds = face(celeba_root, case.args[2]), case.args[3]
    for i, (name, one) in enumerate(zip(SPLITS, found)):
        assert one["outs"] is not None, say("the {name} split has no transform", name=name)
        if name == "train":
            same = like_the_books_train_transform(one["outs"], one["steps"], image, seeds)
        else:
            same = all(same_pixels(got, run(BOOK["eval_transform"], image, seed))
                       for got, seed in zip(one["outs"], seeds))
        with premise_first(lambda i=i: splits_problem(data, i)):
            assert same, say("the {name} split's transform is not the book's {transform}: random augmentation on "
                             "training images only, the centre crop on valid and test", name=name,
                             transform="train_transform()" if name == "train" else "eval_transform()")


REFUSE = N_("load_splits must raise ValueError when asked for more images than a split has, saying how many it has "
            "(the kata's rule: the book's Subset(ds, torch.arange(16000)) takes any n, and a split too small fails "
            "only later, with an IndexError at some batch)")


def test_load_splits_refuses_more_images_than_a_split_has(data):
    *refusals, exact = data.cases("asked")[2:5]
    for split, case in zip(("train", "valid"), refusals):
        err, where = case.answer, dict(refuse=_(REFUSE), split=split, n=SIZES[split],
                                       asked="load_splits(root, n_train={}, n_valid={})".format(*case.args))
        if err is None:
            fail_if(say("{refuse}\n  {asked} on a {split} split of {n} images returned without an error", **where))
        fail_if(torchvision_problem(err["kind"], err["text"]))
        fail_if(unknown_split(err["text"]) if err["kind"] == "ValueError" else None)
        if err["kind"] != "ValueError":
            fail_if(say("{refuse}\n  {asked} on a {split} split of {n} images raised {kind}: {error}",
                        kind=err["kind"], error=err["text"], **where))
        assert str(SIZES[split]) in err["text"].replace(",", ""), say(
            "{refuse}\n  {asked} on a {split} split of {n} images raised ValueError({error!r}), which does "
            "not say {n}", error=err["text"], **where)
    # ... and exactly as many as a split has is not more: all of them.
    train, valid = load(data, exact)
    assert (train, valid) == (SIZES["train"], SIZES["valid"]), say(
        "asked for all the images of each split, load_splits gives them all\n"
        "  it gave {train} and {valid} of {train_size} and {valid_size}", train=train, valid=valid,
        train_size=SIZES["train"], valid_size=SIZES["valid"])


MISSING = N_("load_splits must let kata.celeba.CelebA's error for a missing dataset through: it says what is missing "
             "and how to get it (`kata data`)")


def test_load_splits_passes_on_a_missing_dataset_error(data):
    err = data.cases("asked")[5].answer
    if err is None:
        fail_if(say("{missing}\n  with no dataset under root, it returned without an error", missing=_(MISSING)))
    with premise_first(lambda: torchvision_problem(err["kind"], err["text"])):
        assert "kata data" in err["text"], say("{missing}\n  with no dataset under root, it raised {kind}: {error}",
                                               missing=_(MISSING), kind=err["kind"], error=err["text"])


# --- the loaders ----------------------------------------------------------


def test_make_loaders_default_batch_size_is_32(data):
    sizes = [made(size) for size in load(data, data.cases("loaders")[0])]
    assert sizes == [32, 32, 32], say("make_loaders(train, valid, test) gave batch sizes {sizes}; the book batches "
                                      "by 32: def make_loaders(train, valid, test, batch_size=32)", sizes=sizes)


def test_make_loaders_batches_every_image_once(data):
    found = load(data, data.cases("loaders")[1])
    assert found is not None, _("make_loaders returns (train_dl, valid_dl, test_dl)")
    for i, (name, one) in enumerate(zip(("train_dl", "valid_dl", "test_dl"), found)):
        assert one["loader"], say("{name} is a {kind}, not a torch DataLoader", name=name, kind=one["kind"])
        assert one["batch_size"] == 8, say("{name} has batch_size={size}; pass batch_size on to the DataLoader",
                                           name=name, size=made(one["batch_size"]))
        assert one["same"], say("{name} does not load the dataset given for it", name=name)
        sizes, n = one["sizes"], one["n"]
        assert sizes[0] == 8 and sum(sizes) == n and len(sizes) == math.ceil(n / 8), say(
            "{name} gave batches of {sizes} for {n} images with batch_size=8; every image once, "
            "the last batch may be smaller (drop_last=False, the default)", name=name, sizes=sizes, n=n)
        images, labels = one["first"]
        assert images == 8 and labels == 8, say("{name} gave a first batch of {images} images and {labels} labels "
                                                "with batch_size=8", name=name, images=images, labels=labels)
        check_tensor_image(one["x"], say("an image of {name}", name=name), lambda i=i: splits_problem(data, i))


def test_only_the_training_loader_shuffles(data):
    found = load(data, data.cases("loaders")[2])
    assert found["random"], _("train_dl does not shuffle: DataLoader(train, batch_size, shuffle=True), so each "
                              "epoch sees the training images in a new order")
    for name, sequential in zip(("valid_dl", "test_dl"), found["sequential"]):
        assert sequential, say("{name} shuffles; only the training loader does (the scores don't depend on order, "
                               "and a fixed order makes runs comparable)", name=name)
    for label in found["label"]:
        fail_if(item_label_problem(data, label, _("train_dl's first label")))
    assert found["orders"] > 1, _("four passes over train_dl gave the labels in the same order: it does not shuffle")
