"""Checks for exercise 2, data: CelebA smiles.

The book (chapter 14) labels each face with attribute 31 (Smiling), augments
training images with a random crop and flip, crops validation and test images
in the centre, shrinks everything to 64x64, takes the first 16,000 training and
1,000 validation images, and batches them by 32, shuffling only the training
set. These checks run the learner's pipeline on a small synthetic CelebA.

Transforms are compared by what they do, never by their text: `Resize(64)`
after a 178x178 crop is `Resize([64, 64])`, and `CenterCrop(178)` is
`CenterCrop([178, 178])`. torchvision's `transforms.v2` is welcome too: its
`ToImage()` and `ToDtype(torch.float32, scale=True)` are the book's `ToTensor()`,
and pixels are compared to float precision (they differ from ToTensor's in the
last bit of a float32; one step of a pixel is 1/255).

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import inspect
import math

import pytest
import torch
from hypothesis import given
from PIL import Image
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, Subset
from torchvision import transforms as T
from torchvision.transforms import v2

import kata.celeba
from kata.celeba import ATTRIBUTE_NAMES
from kata.checks import lessons
from kata.checks.book import book_eval_transform, book_train_transform
from kata.checks.messages import describe, fail_if
from kata.harness.target import TargetError, module_of
from kata.i18n import N_, _, say
from kata.records.strategies import attribute_vectors, pil_images

BOOK_TRAIN = book_train_transform().transforms
BOOK_EVAL = book_eval_transform().transforms
COMPOSES = (T.Compose, v2.Compose)


def same_pixels(got, want) -> bool:
    """The same image tensor, to float precision (v2's ToDtype scales by 1/255, ToTensor divides by 255)."""
    return (isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype == want.dtype
            and torch.allclose(got, want, rtol=0, atol=1e-6))


def face(celeba_root, index=0) -> Image.Image:
    """One 178x218 face of the synthetic CelebA."""
    folder = celeba_root / "celeba" / "img_align_celeba"
    return Image.open(sorted(folder.iterdir())[index]).convert("RGB")


def _pair(size) -> list[int] | None:
    """A size as [height, width]; None for Resize's one number (the shorter side)."""
    if isinstance(size, int):
        return [size, size]
    size = list(size)
    return [int(size[0]), int(size[0])] if len(size) == 1 else [int(v) for v in size]


def steps(transform) -> list[str]:
    """Each step of a transform as the book would write it, with sizes normalised
    (`CenterCrop(178)` is `CenterCrop([178, 178])`; `Resize(64)` right after a square
    crop is `Resize([64, 64])`) and any setting that differs from the default shown."""
    inner = list(transform.transforms) if isinstance(transform, COMPOSES) else [transform]
    out, square = [], False
    for i, t in enumerate(inner):
        name = type(t).__name__
        if name == "ToDtype" and i and type(inner[i - 1]).__name__ == "ToImage" and t.scale and (
                t.dtype == torch.float32 or (isinstance(t.dtype, dict) and set(t.dtype.values()) == {torch.float32})):
            out[-1] = "ToTensor()"   # v2's ToImage() then ToDtype(torch.float32, scale=True)
            continue
        if name in ("RandomCrop", "CenterCrop"):
            h, w = _pair(t.size)
            extras = []
            if name == "RandomCrop":
                extras += [f"padding={t.padding}"] if t.padding else []
                extras += ["pad_if_needed=True"] if getattr(t, "pad_if_needed", False) else []
            out.append(f"{name}([{h}, {w}]{''.join(', ' + e for e in extras)})")
            square = h == w
        elif name == "Resize":
            size = t.size
            one = isinstance(size, int) or len(list(size)) == 1
            value = size if isinstance(size, int) else list(size)[0]
            if one and square and t.max_size is None:
                shown = f"[{value}, {value}]"     # the shorter side of a square: both sides
            elif one:
                shown = f"{value}"                # the shorter side only: the aspect ratio is kept
            else:
                shown = str(_pair(size))
            extras = []
            interpolation = getattr(t.interpolation, "value", t.interpolation)
            if interpolation != "bilinear":
                extras.append(f"interpolation={interpolation}")
            if t.max_size is not None:
                extras.append(f"max_size={t.max_size}")
            if getattr(t, "antialias", True) is False:
                extras.append("antialias=False")
            out.append(f"Resize({shown}{''.join(', ' + e for e in extras)})")
        elif name == "RandomHorizontalFlip":
            out.append("RandomHorizontalFlip()" if t.p == 0.5 else f"RandomHorizontalFlip(p={t.p})")
        elif name == "ToTensor":
            out.append("ToTensor()")
        else:
            out.append(repr(t).replace("\n", " "))
    return out


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
            else describe(index))


def is_one_number(label) -> bool:
    return (isinstance(label, (int, float)) and not isinstance(label, bool)) or (
        isinstance(label, torch.Tensor) and label.dim() == 0)


def attributes_read(data) -> list[int]:
    """Which attributes get_smile reads, probed with one-hot vectors. A probe that gives more than
    one number fails the check with ONE_ATTRIBUTE (a stub's NotImplementedError passes through)."""
    read = []
    for i in range(40):
        label = data.get_smile(torch.eye(40, dtype=torch.int64)[i])
        if not is_one_number(label):
            pytest.fail(say(ONE_ATTRIBUTE, value=describe(label)), pytrace=False)
        if int(label) == 1:
            read.append(i)
    return read


@pytest.mark.audit("smiling")
def test_smiling_is_attribute_31(data):
    if data.SMILING != 31:
        fail_if(say(SMILING_IS, wrong=_(WRONG_ATTRIBUTE), value=named(data.SMILING)))


@pytest.mark.audit("get_smile.reads")
def test_get_smile_reads_attribute_31(data):
    read = attributes_read(data)
    if read != [31]:
        fail_if(say(READS, wrong=_(WRONG_ATTRIBUTE), read=", ".join(named(i) for i in read) or _("none")))


def label_problem(label, attr) -> str | None:
    """Why ``label`` is not the book's label for ``attr`` (its Smiling entry as it is), or None.
    The same first line wherever a label is looked at: get_smile's result, a dataset's item."""
    if not isinstance(label, torch.Tensor):
        return say("{lesson}\n  the label is {value}", lesson=_(lessons.LABEL_NOT_A_TENSOR), value=describe(label))
    if label.shape != ():
        return say(ONE_ATTRIBUTE, value=describe(label))
    if label.dtype != attr.dtype:
        return say("{lesson}\n  the label is {value} of dtype {dtype}", lesson=_(lessons.LABEL_WRONG_DTYPE),
                   value=describe(label), dtype=label.dtype)
    return None


@given(attr=attribute_vectors())
@pytest.mark.audit("get_smile")
def test_get_smile_returns_the_smiling_attribute(data, attr):
    label = data.get_smile(attr)
    if isinstance(label, torch.Tensor) and label.shape == () and label.dtype == attr.dtype and torch.equal(
            label, attr[31]):
        return
    read = attributes_read(data)
    if read != [31]:
        fail_if(say(READS, wrong=_(WRONG_ATTRIBUTE), read=", ".join(named(i) for i in read) or _("none")))
    fail_if(label_problem(label, attr))
    pytest.fail(say("get_smile(attr) must equal attr[31]\n  for {attr} it returned {value}, "
                    "attr[31] is {smiling}", attr=attr.tolist(), value=describe(label), smiling=int(attr[31])),
                pytrace=False)


# --- the transforms -------------------------------------------------------


@pytest.mark.parametrize("which, book", [("train_transform", BOOK_TRAIN), ("eval_transform", BOOK_EVAL)],
                         ids=["train_transform", "eval_transform"])
@pytest.mark.audit("compose[{which}]")
def test_transform_is_the_books_compose(data, which, book):
    transform = getattr(data, which)()
    assert isinstance(transform, COMPOSES), say(
        "{which}() must return one transforms.Compose([...]) chaining the book's steps\n  it returned "
        "{value}", which=which, value=describe(transform))
    got, want = steps(transform), steps(T.Compose(book))
    assert got == want, say(
        "{which}() must be the book's Compose: the same steps, in the same order, with the same sizes\n"
        "  yours:  Compose([{yours}])\n  book's: Compose([{books}])", which=which, yours=", ".join(got),
        books=", ".join(want))


@given(image=pil_images())
@pytest.mark.audit("train.kind")
def test_train_transform_gives_a_3x64x64_float_tensor_in_0_1(data, image):
    out = run(data.train_transform(), image, seed=0)
    check_tensor_image(out, "train_transform")


@given(image=pil_images())
@pytest.mark.audit("eval.kind")
def test_eval_transform_gives_a_3x64x64_float_tensor_in_0_1(data, image):
    out = data.eval_transform()(image)
    check_tensor_image(out, "eval_transform")


def check_tensor_image(out, which):
    assert isinstance(out, torch.Tensor), say(
        "a transform must end with transforms.ToTensor(), so the model gets a tensor\n  {which} returned "
        "{value}", which=which, value=describe(out))
    assert out.shape == (3, 64, 64), say(
        "a transform must give a 3x64x64 image: crop to 178x178 first, then Resize([64, 64]) (on a square, "
        "Resize(64) is the same; on the 178x218 face it keeps the aspect ratio)\n  {which} gave shape "
        "{shape}", which=which, shape=tuple(out.shape))
    assert out.dtype == torch.float32, say(
        "a transform must give float32 pixels, as ToTensor() makes them\n  {which} gave dtype {dtype}",
        which=which, dtype=out.dtype)
    assert 0.0 <= out.min().item() and out.max().item() <= 1.0, say(
        "a transform must give pixels in [0, 1], as ToTensor() scales them\n  {which} gave values from "
        "{low} to {high}", which=which, low=out.min().item(), high=out.max().item())


@pytest.mark.audit("eval.faces")
def test_eval_transform_matches_the_book_exactly(data, celeba_root):
    for i in range(3):
        image = face(celeba_root, i)
        got = data.eval_transform()(image)
        want = T.Compose(BOOK_EVAL)(image)
        if same_pixels(got, want):
            continue
        resized_first = T.Compose([T.Resize([64, 64]), T.CenterCrop([178, 178]), T.ToTensor()])(image)
        assert not same_pixels(got, resized_first), _(
            "eval_transform resizes before it crops: the 178x218 face is squashed to 64x64 and then "
            "padded. CenterCrop([178, 178]) must come first, then Resize([64, 64])")
        check_tensor_image(got, "eval_transform")
        pytest.fail(_("eval_transform(image) differs from the book's "
                      "Compose([CenterCrop([178, 178]), Resize([64, 64]), ToTensor()]) on a 178x218 face"),
                    pytrace=False)


@pytest.mark.audit("eval.deterministic")
def test_eval_transform_is_deterministic(data, celeba_root):
    image = face(celeba_root)
    outs = [pixels(run(data.eval_transform(), image, seed)) for seed in range(4)]
    assert all(torch.equal(outs[0], o) for o in outs[1:]), _(
        "eval_transform gave different tensors for the same image: validation and test images must not "
        "be randomised (no RandomCrop or RandomHorizontalFlip there), or the scores can't be compared")


def book_augmentations(image) -> list[torch.Tensor]:
    """Every tensor the book's train_transform can make of a 178x218 face: 41 crops, each flipped or not."""
    out = []
    for top in range(image.height - 178 + 1):
        crop = image.crop((0, top, 178, top + 178))
        for picture in (crop, crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT)):
            out.append(T.ToTensor()(T.Resize([64, 64])(picture)))
    return out


def like_the_books_train_transform(transform, image, seeds) -> bool:
    """The book's tensor under each seed, or (the book's steps, drawn in another order, as
    transforms.v2 draws them) one of the book's crops and flips for each seed."""
    outs = [run(transform, image, seed) for seed in seeds]
    if all(same_pixels(got, run(T.Compose(BOOK_TRAIN), image, seed)) for got, seed in zip(outs, seeds)):
        return True
    if steps(transform) != steps(T.Compose(BOOK_TRAIN)):
        return False
    possible = book_augmentations(image)
    return all(any(same_pixels(got, want) for want in possible) for got in outs)


@pytest.mark.audit("train.values")
def test_train_transform_matches_the_book_under_the_same_seed(data, celeba_root):
    image = face(celeba_root, 1)
    check_tensor_image(run(data.train_transform(), image, 0), "train_transform")
    assert like_the_books_train_transform(data.train_transform(), image, range(6)), _(
        "under torch.manual_seed(0) to (5), train_transform(image) differs from the book's "
        "Compose([RandomCrop([178, 178]), RandomHorizontalFlip(), Resize([64, 64]), ToTensor()]): "
        "same steps, same order, same sizes, default flip probability 0.5")


@pytest.mark.audit("train.random")
def test_train_transform_is_random(data, celeba_root):
    image = face(celeba_root, 2)
    outs = [pixels(run(data.train_transform(), image, seed)) for seed in range(8)]
    assert any(not torch.equal(outs[0], o) for o in outs[1:]), _(
        "train_transform gave the same tensor 8 times for one image: augmentation means a random crop "
        "and a random horizontal flip each time an image is loaded")


def pixels(out) -> torch.Tensor:
    """A transform's output as a float tensor of its pixels in [0, 1], whatever it is (a PIL image, a
    uint8 tensor, ...): for the checks that look at what it shows, not at its form (the checks
    above look at that)."""
    if isinstance(out, Image.Image):
        out = T.functional.pil_to_tensor(out)
    assert isinstance(out, torch.Tensor), say(
        "a transform must give an image (a tensor: the model gets tensors)\n"
        "  it gave {value}", value=describe(out))
    return out.float() / 255 if not out.is_floating_point() else out.float()


@pytest.mark.audit("train.flips")
def test_train_transform_flips_about_half_the_time(data):
    # Left half black, right half white: after a flip, the left half is the brighter one.
    image = Image.new("RGB", (178, 218), "black")
    image.paste((255, 255, 255), (89, 0, 178, 218))
    torch.manual_seed(0)
    transform = data.train_transform()
    check_tensor_image(transform(image), "train_transform")   # the form first: a 3x64x64 float image
    flips = 0
    for _round in range(200):
        out = pixels(transform(image))
        half = out.shape[-1] // 2
        flips += bool(out[..., :half].mean() > out[..., out.shape[-1] - half:].mean())
    assert 70 <= flips <= 130, say(
        "the training transform flipped {flips} of 200 images; RandomHorizontalFlip() flips half of "
        "them (p=0.5, its default) — a smile is still a smile in a mirror", flips=flips)


@pytest.mark.audit("eval.band")
def test_crop_happens_before_resize(data):
    # A 178x218 picture with a white band in the 20 rows that CenterCrop(178) cuts off
    # at the bottom: cropped first, the band is gone; resized first, it shows.
    image = Image.new("RGB", (178, 218), "black")
    image.paste((255, 255, 255), (0, 198, 178, 218))
    out = torch.stack([pixels(data.eval_transform()(image)) for _draw in range(8)])   # a random crop shows it, often
    assert out.max().item() < 0.05, _(
        "eval_transform kept the bottom rows that a 178x178 centre crop removes: crop first "
        "(CenterCrop([178, 178])), then Resize([64, 64]), so a 178x218 face keeps its proportions")


# --- the splits -----------------------------------------------------------


REFUSE_EXACT = N_("load_splits refuses only MORE images than a split has: asked for exactly as many as a split holds, "
                  "it gives them all (n <= len(split) is fine)\n  {call} on splits of {sizes} images raised "
                  "ValueError({error!r})")
REFUSE_FEWER = N_("load_splits raised ValueError for images a split has: it refuses only more than a split holds\n"
                  "  {call} on splits of {sizes} images raised ValueError({error!r})")


def split_sizes(root) -> dict[str, int]:
    return {s: len(kata.celeba.CelebA(root, split=s)) for s in ("train", "valid")}


def load(data, root, **kwargs):
    """data.load_splits, with torchvision's checksum refusal and a refusal of a request the
    split can meet explained."""
    __tracebackhide__ = True
    try:
        return data.load_splits(root, **kwargs)
    except RuntimeError as err:
        if "Dataset not found or corrupted" in str(err):
            pytest.fail(say("load_splits used torchvision.datasets.CelebA, whose md5 check rejects the kata's "
                            "synthetic CelebA: load it with `from kata.celeba import CelebA` (same signature, "
                            "real CelebA loads exactly as in torchvision).\n  ({error})", error=str(err)),
                        pytrace=False)
        raise
    except ValueError as err:
        try:
            sizes = split_sizes(root)
        except Exception:   # no dataset there: the learner's error stands
            raise err from None
        asked = {"train": kwargs.get("n_train", 16000), "valid": kwargs.get("n_valid", 1000)}
        if all(asked[s] <= sizes[s] for s in sizes):
            call = f"load_splits(root, {', '.join(f'{k}={v}' for k, v in kwargs.items())})"
            shown = say("{train} (train) and {valid} (valid)", train=sizes["train"], valid=sizes["valid"])
            exact = any(asked[s] == sizes[s] for s in sizes)
            fail_if(say(REFUSE_EXACT if exact else REFUSE_FEWER, call=call, sizes=shown, error=str(err)))
        raise


@pytest.mark.audit("splits.defaults")
def test_load_splits_defaults_are_the_books(data, celeba_root, monkeypatch):
    params = inspect.signature(data.load_splits).parameters
    defaults = {name: p.default for name, p in params.items() if name in ("n_train", "n_valid")}
    assert defaults == {"n_train": 16000, "n_valid": 1000}, say(
        "load_splits must take the book's first 16,000 training and 1,000 validation images by default: "
        "def load_splits(root, n_train=16000, n_valid=1000)\n  its defaults are {defaults}", defaults=defaults)
    # The small set has fewer images: make each split look big enough, so the defaults can be taken.
    enlarged = enlarge(monkeypatch, data, 20000)
    train, valid, _test = load(data, celeba_root)
    sizes = {"train": len(train), "valid": len(valid)}
    assert sizes == {"train": 16000, "valid": 1000}, say(
        "load_splits(root) must give the first 16,000 training and 1,000 validation images, using its "
        "defaults\n  from splits of {enlarged} images each it gave {sizes}", enlarged=enlarged, sizes=sizes)


def enlarge(monkeypatch, data, n) -> int:
    """Make kata.celeba.CelebA report at least ``n`` items (indexing stays as it is)."""

    class Enlarged(kata.celeba.CelebA):
        def __len__(self):
            return max(n, super().__len__())

    replace_celeba(monkeypatch, data, Enlarged)
    return n


def replace_celeba(monkeypatch, data, cls):
    """Put ``cls`` where the learner's module finds kata's CelebA: ``kata.celeba.CelebA``, and
    each of its module's names bound to it (``from kata.celeba import CelebA as celeba``)."""
    original = kata.celeba.CelebA
    monkeypatch.setattr(kata.celeba, "CelebA", cls)
    module = module_of(data)
    for name, value in list(vars(module).items()):
        if value is original:
            monkeypatch.setattr(module, name, cls)


@pytest.mark.audit("splits.calls")
def test_load_splits_calls_celeba_as_the_book_does(data, celeba_root, monkeypatch):
    calls = []
    signature = inspect.signature(kata.celeba.CelebA.__init__)

    class Spy(kata.celeba.CelebA):
        def __init__(self, *args, **kwargs):
            calls.append((args, kwargs))
            super().__init__(*args, **kwargs)

    replace_celeba(monkeypatch, data, Spy)
    load(data, celeba_root, n_train=8, n_valid=4)
    assert calls, _("load_splits never created a kata.celeba.CelebA: load each split with `CelebA(root, split=...)`")
    bound = [signature.bind(None, *a, **k).arguments for a, k in calls]
    splits = sorted(b.get("split", "train") for b in bound)
    assert splits == ["test", "train", "valid"], say(
        "load_splits loaded the splits {splits}; the book loads 'train', 'valid' and 'test', one each", splits=splits)
    for b in bound:
        split = b.get("split", "train")
        assert b.get("target_type", "attr") == "attr", say(
            "split {split!r} was loaded with target_type={value!r}; the labels come from the 40 "
            "attributes: target_type='attr'", split=split, value=b["target_type"])
        assert b.get("download", False) is False, say(
            "split {split!r} was loaded with download={value!r}: the book passes download=False "
            "(the data must already be on disk)", split=split, value=b["download"])
        assert b.get("target_transform") is not None, say(
            "split {split!r} has no target_transform: pass target_transform=get_smile, so each label is "
            "the Smiling attribute instead of all 40", split=split)


@pytest.mark.audit("splits.shape")
def test_load_splits_sizes_and_first_items(data, celeba_root):
    full = {s: kata.celeba.CelebA(celeba_root, split=s) for s in ("train", "valid", "test")}
    train, valid, test = load(data, celeba_root, n_train=10, n_valid=6)
    for name, ds, n in (("train", train, 10), ("valid", valid, 6)):
        assert isinstance(ds, Subset), say(
            "the {name} set is a {kind}; the book takes the first n images with "
            "torch.utils.data.Subset(ds, torch.arange(n))", name=name, kind=type(ds).__name__)
        assert len(ds) == n, say("the {name} set has {size} images, asked for the first {n}", name=name, size=len(ds),
                                 n=n)
        fail_if(first_items_problem(ds, n, name))
        assert getattr(ds.dataset, "split", None) == name, say(
            "the {name} subset is drawn from the {split!r} split", name=name, split=getattr(ds.dataset, "split", "?"))
    assert not isinstance(test, Subset) and len(test) == len(full["test"]), say(
        "the test set has {size} images, the whole test split has {whole}: return it whole", size=len(test),
        whole=len(full["test"]))
    assert getattr(test, "split", None) == "test", _("the third dataset returned must be the 'test' split")


FIRST_ITEMS = N_("the train and valid subsets hold the FIRST n images of their split, in order: torch.arange(n), "
                 "not a random choice\n  the {name} subset holds items {items}; it should be 0 to {last}")


def first_items_problem(ds, n, name) -> str | None:
    """FIRST_ITEMS when the Subset ``ds`` does not hold the first ``n`` items of its split (else None)."""
    indices = [int(i) for i in getattr(ds, "indices", range(len(ds)))]
    if indices == list(range(n)):
        return None
    return say(FIRST_ITEMS, name=name, items=indices[:12], last=n - 1)


ALL_ATTRIBUTES = N_("each label is the Smiling attribute: pass target_transform=get_smile, or the label is all 40 "
                    "attributes\n  {what} is {value}")


def item_label_problem(label, what) -> str | None:
    """Why a dataset's (or a loader's) label is not the book's, or None; the same first lines as get_smile's."""
    if isinstance(label, torch.Tensor) and label.shape == (40,):
        return say(ALL_ATTRIBUTES, what=what, value=describe(label))
    return label_problem(label, torch.zeros(40, dtype=torch.int64))


@pytest.mark.audit("splits.labels")
def test_load_splits_labels_are_the_smiling_attribute(data, celeba_root):
    # Read the labels straight from the attribute file, independently of torchvision.
    lines = (celeba_root / "celeba" / "list_attr_celeba.txt").read_text().splitlines()
    column = lines[1].split().index("Smiling")
    smiling = {row.split()[0]: int(row.split()[1 + column]) == 1 for row in lines[2:]}
    train, valid, test = load(data, celeba_root, n_train=8, n_valid=4)
    fail_if(first_items_problem(train, 8, "train") or first_items_problem(valid, 4, "valid"))
    for name, ds in (("train", train), ("valid", valid), ("test", test)):
        base = ds.dataset if isinstance(ds, Subset) else ds
        for i in range(4):
            _image, label = ds[i]
            filename = base.filename[int(ds.indices[i]) if isinstance(ds, Subset) else i]
            fail_if(item_label_problem(label, say("{name}[{index}]'s label", name=name, index=i)))
            if bool(label) != smiling[filename] and attributes_read(data) != [31]:
                fail_if(say(READS, wrong=_(WRONG_ATTRIBUTE),
                            read=", ".join(named(i) for i in attributes_read(data)) or _("none")))
            assert bool(label) == smiling[filename], say(
                "{name}[{index}] ({filename}) is labelled {label}, but its Smiling attribute is "
                "{smiling}: the target_transform must pick attribute 31", name=name, index=i, filename=filename,
                label=int(label), smiling=int(smiling[filename]))


@pytest.mark.audit("splits.eval_items", "splits.train_items")
def test_load_splits_augments_only_the_training_split(data, celeba_root):
    train, valid, test = load(data, celeba_root, n_train=8, n_valid=4)
    fail_if(first_items_problem(train, 8, "train") or first_items_problem(valid, 4, "valid"))
    for name, ds in (("train", train), ("valid", valid), ("test", test)):
        x, _label = ds[0]
        check_tensor_image(x, say("the {name} split's transform", name=name))
    image = face(celeba_root)
    for name, ds, book in (("train", train, BOOK_TRAIN), ("valid", valid, BOOK_EVAL), ("test", test, BOOK_EVAL)):
        base = ds.dataset if isinstance(ds, Subset) else ds
        assert base.transform is not None, say("the {name} split has no transform", name=name)
        if name == "train":
            same = like_the_books_train_transform(base.transform, image, range(3))
        else:
            same = all(same_pixels(run(base.transform, image, seed), run(T.Compose(book), image, seed))
                       for seed in range(3))
        assert same, say(
            "the {name} split's transform is not the book's {transform}: random augmentation on training images "
            "only, the centre crop on valid and test", name=name,
            transform="train_transform()" if name == "train" else "eval_transform()")


REFUSE = N_("load_splits must raise ValueError when asked for more images than a split has, saying how many it has "
            "(the kata's rule: the book's Subset(ds, torch.arange(16000)) takes any n, and a split too small fails "
            "only later, with an IndexError at some batch)")


@pytest.mark.audit("splits.refuse")
def test_load_splits_refuses_more_images_than_a_split_has(data, celeba_root):
    for split in ("train", "valid"):
        n = len(kata.celeba.CelebA(celeba_root, split=split))
        kwargs = {"n_train": 8, "n_valid": 4, f"n_{split}": n + 1}
        asked = f"load_splits(root, n_train={kwargs['n_train']}, n_valid={kwargs['n_valid']})"
        try:
            data.load_splits(celeba_root, **kwargs)
        except ValueError as err:
            assert str(n) in str(err).replace(",", ""), say(
                "{refuse}\n  {asked} on a {split} split of {n} images raised ValueError({error!r}), which does "
                "not say {n}", refuse=_(REFUSE), asked=asked, split=split, n=n, error=str(err))
        except (NotImplementedError, TargetError):
            raise
        except Exception as err:
            pytest.fail(say("{refuse}\n  {asked} on a {split} split of {n} images raised {kind}: "
                            "{error}", refuse=_(REFUSE), asked=asked, split=split, n=n, kind=type(err).__name__,
                            error=str(err)), pytrace=False)
        else:
            pytest.fail(say("{refuse}\n  {asked} on a {split} split of {n} images returned without an error",
                            refuse=_(REFUSE), asked=asked, split=split, n=n), pytrace=False)
    # ... and exactly as many as a split has is not more: all of them.
    sizes = split_sizes(celeba_root)
    train, valid, _test = load(data, celeba_root, n_train=sizes["train"], n_valid=sizes["valid"])
    assert (len(train), len(valid)) == (sizes["train"], sizes["valid"]), say(
        "asked for all the images of each split, load_splits gives them all\n"
        "  it gave {train} and {valid} of {train_size} and {valid_size}", train=len(train), valid=len(valid),
        train_size=sizes["train"], valid_size=sizes["valid"])


MISSING = N_("load_splits must let kata.celeba.CelebA's error for a missing dataset through: it says what is missing "
             "and how to get it (`kata data`)")


@pytest.mark.audit("splits.missing")
def test_load_splits_passes_on_a_missing_dataset_error(data, tmp_path):
    try:
        data.load_splits(tmp_path, n_train=8, n_valid=4)
    except (NotImplementedError, TargetError):  # NotImplementedError is a RuntimeError too: the stub
        raise
    except Exception as err:
        assert "kata data" in str(err), say(
            "{missing}\n  with no dataset under root, it raised {kind}: {error}", missing=_(MISSING),
            kind=type(err).__name__, error=str(err))
    else:
        pytest.fail(say("{missing}\n  with no dataset under root, it returned without an error", missing=_(MISSING)),
                    pytrace=False)


# --- the loaders ----------------------------------------------------------


@pytest.mark.audit("loaders.default_batch")
def test_make_loaders_default_batch_size_is_32(data, celeba_root):
    train, valid, test = load(data, celeba_root, n_train=8, n_valid=4)
    sizes = [dl.batch_size for dl in data.make_loaders(train, valid, test)]
    assert sizes == [32, 32, 32], say(
        "make_loaders(train, valid, test) gave batch sizes {sizes}; the book batches by 32: "
        "def make_loaders(train, valid, test, batch_size=32)", sizes=sizes)


@pytest.mark.audit("loaders.batches")
def test_make_loaders_batches_every_image_once(data, celeba_root):
    train, valid, test = load(data, celeba_root, n_train=20, n_valid=12)
    loaders = data.make_loaders(train, valid, test, batch_size=8)
    assert isinstance(loaders, tuple) and len(loaders) == 3, _("make_loaders returns (train_dl, valid_dl, test_dl)")
    for name, dl, ds in zip(("train_dl", "valid_dl", "test_dl"), loaders, (train, valid, test)):
        assert isinstance(dl, DataLoader), say("{name} is a {kind}, not a torch DataLoader", name=name,
                                               kind=type(dl).__name__)
        assert dl.batch_size == 8, say("{name} has batch_size={size}; pass batch_size on to the DataLoader",
                                       name=name, size=dl.batch_size)
        assert dl.dataset is ds, say("{name} does not load the dataset given for it", name=name)
        sizes = [len(y) for _, y in dl]
        assert sizes[0] == 8 and sum(sizes) == len(ds) and len(sizes) == math.ceil(len(ds) / 8), say(
            "{name} gave batches of {sizes} for {n} images with batch_size=8; every image once, "
            "the last batch may be smaller (drop_last=False, the default)", name=name, sizes=sizes, n=len(ds))
        x, y = next(iter(dl))
        assert len(x) == 8 and len(y) == 8, say(
            "{name} gave a first batch of {images} images and {labels} labels with batch_size=8", name=name,
            images=len(x), labels=len(y))
        check_tensor_image(x[0], say("an image of {name}", name=name))


@pytest.mark.audit("loaders.samplers", "loaders.shuffles")
def test_only_the_training_loader_shuffles(data, celeba_root):
    train, valid, test = load(data, celeba_root, n_train=24, n_valid=12)
    train_dl, valid_dl, test_dl = data.make_loaders(train, valid, test, batch_size=8)
    assert isinstance(train_dl.sampler, RandomSampler), _(
        "train_dl does not shuffle: DataLoader(train, batch_size, shuffle=True), so each epoch sees "
        "the training images in a new order")
    for name, dl in (("valid_dl", valid_dl), ("test_dl", test_dl)):
        assert isinstance(dl.sampler, SequentialSampler), say(
            "{name} shuffles; only the training loader does (the scores don't depend on order, and a "
            "fixed order makes runs comparable)", name=name)
    _x, y = next(iter(train_dl))
    fail_if(item_label_problem(y[0], _("train_dl's first label")) if len(y) else None)
    torch.manual_seed(0)
    orders = {tuple(torch.cat([y for _, y in train_dl]).tolist()) for _ in range(4)}
    assert len(orders) > 1, _("four passes over train_dl gave the labels in the same order: it does not shuffle")
