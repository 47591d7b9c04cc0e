"""Checks for exercise 3, model: the book's CNN, layer for layer.

The book (chapter 14) builds the smile classifier as one nn.Sequential; these checks hold `build_model()` to it:
the same layers in the same order, 388,673 parameters, an (N, 1) output of probabilities, no device moves inside.
Each reads a record's answers (records/model.py), and the book's CNN's answers to the same record where it compares.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

from types import SimpleNamespace

import torch
from torch.nn.modules.utils import _pair

from kata.checks.book import BOOK_LAYERS, BOOK_PARAMETERS, book_cnn
from kata.checks.declared import dropouts_problem
from kata.checks.messages import fail_if, premise_first
from kata.i18n import N_, _, say
from kata.records.wire import typed, untyped


def book(model, name: str, *args):
    """The book's CNN's answer to record ``name`` on the same inputs (asked here, through the wire as a learner's)."""
    return untyped(typed(model.records[name].ask(SimpleNamespace(build_model=book_cnn), *args)))


def describe(s: dict) -> str:
    """A layer (its settings, as its record says them) as a person would write it, each setting in one spelling:
    kernel_size=3 and (3, 3) are the same layer, and padding=1 and 'same' for a 3x3 kernel ('valid': 0)."""
    if s["kind"] == "Conv2d":
        pad, (kh, kw) = s["padding"], _pair(s["kernel_size"])
        ph, pw = ((0, 0) if pad == "valid" else _pair(pad) if pad != "same" else
                  [d * (k - 1) // 2 if d * (k - 1) % 2 == 0 else -1 for k, d in zip((kh, kw), _pair(s["dilation"]))])
        extras = [f"dilation={s['dilation']}"] if _pair(s["dilation"]) != (1, 1) else []
        extras += [f"groups={s['groups']}"] if s["groups"] != 1 else []
        extras += [f"padding_mode={s['padding_mode']!r}"] if s["padding_mode"] != "zeros" else []
        return (f"Conv2d({s['in_channels']} -> {s['out_channels']}, kernel_size={kh}{'' if kh == kw else f'x{kw}'}, "
                f"stride={_pair(s['stride'])[0]}, padding={ph}{'' if ph == pw else f'x{pw}'}, "
                f"bias={s['bias']}{''.join(', ' + e for e in extras)})")
    if s["kind"] == "pool":
        return (f"{s['name']}(kernel_size={_pair(s['kernel_size'])[0]}, "
                f"stride={_pair(s['stride'] or s['kernel_size'])[0]}, padding={_pair(s['padding'])[0]})")
    return FORMATS[s["kind"]].format(**s)


FORMATS = {"Dropout": "Dropout(p={p})", "Linear": "Linear({in_features} -> {out_features}, bias={bias})",
           "Flatten": "Flatten(start_dim={start_dim}, end_dim={end_dim})", None: "{name}()"}


SHAPES = N_("the model can't take a batch of 3x64x64 images through its layers: a layer gets maps of a size it "
            "can't take (the book's sizes: each 3x3 convolution with padding 1 keeps the size, each max-pool halves "
            "it, 64 -> 32 -> 16 -> 8, and the average pool takes the 8x8 maps to 1x1, so Linear gets 256 numbers)\n"
            "  layer {index}, {layer}, fails on {shape}; the shapes before it: {trail}\n  (PyTorch: {error})")


def out(found: dict) -> torch.Tensor:
    """A forward pass's output; a layer that couldn't take what it got fails the check saying which, and the shapes."""
    __tracebackhide__ = True
    if "stuck" in found:
        stuck = found["stuck"]
        shown = " -> ".join("x".join(map(str, shape[1:])) for shape in stuck["trail"])
        fail_if(say(SHAPES, index=stuck["index"], layer=describe(stuck["layer"]),
                    shape="x".join(map(str, stuck["shape"][1:])), trail=shown, error=stuck["error"]))
    return found["out"]


SEQUENTIAL = N_("build_model() must return the book's nn.Sequential (one stack of layers, called in order)\n"
                "  it returned a {kind}")


def test_build_model_returns_an_nn_sequential(model):
    found = model.answer("built")
    assert found["sequential"], say(SEQUENTIAL, kind=found["kind"])


OTHER_LAYER = N_("layer {index} is {got}, the book has {want} there.\nThe book's layers, in order:\n  {book}")
FEWER_LAYERS = N_("build_model() has {found} layers, the book's CNN has {expected}: missing {missing}")
MORE_LAYERS = N_("build_model() has {found} layers, the book's CNN has {expected}: extra {extra}")


def layers_problem(model) -> str | None:
    """How build_model()'s layers differ from the book's, in order (None: they are the book's). The premise of
    every check that runs the model or counts its weights: where such a check fails and this says why, it fails
    with this message."""
    found = model.answer("built")
    if "layers" not in found:   # not a module at all
        return say(SEQUENTIAL, kind=found["kind"])
    found = [describe(m) for m in found["layers"]]
    expected = [describe(m) for m in book(model, "built")["layers"]]
    for i, (want, got) in enumerate(zip(expected, found)):
        if got != want:
            return say(OTHER_LAYER, index=i, got=got, want=want, book="\n  ".join(expected))
    if len(found) < len(expected):
        return say(FEWER_LAYERS, found=len(found), expected=len(expected), missing=expected[len(found):])
    if len(found) > len(expected):
        return say(MORE_LAYERS, found=len(found), expected=len(expected), extra=found[len(expected):])
    return None


def test_layers_match_the_book_in_order(model):
    fail_if(layers_problem(model))
    # the rates as written (a property can show the book's p over another): read from the source, never run
    fail_if(dropouts_problem(model.answer("declared"),
                             {"dropouts": [kw for cls, kw in BOOK_LAYERS if cls is torch.nn.Dropout]}))


def test_parameter_count_is_the_books_388673(model):
    n = model.answer("built")["count"]
    with premise_first(lambda: layers_problem(model)):
        assert n == BOOK_PARAMETERS, say(
            "the model has {n:,} parameters, the book's CNN has {book:,}: check the "
            "channel counts (3->32->64->128->256), kernel_size=3, and Linear(256, 1)", n=n, book=BOOK_PARAMETERS)


PROBABILITIES = N_("the model's outputs must be probabilities in (0, 1): the last layer is nn.Sigmoid(), so that "
                   "BCELoss gets probabilities\n  outputs: {outputs}")


def test_output_is_one_probability_per_image(model):
    with premise_first(lambda: layers_problem(model)):
        for case in model.cases("output"):
            (batch, _seed), y = case.args, out(case.answer)
            assert isinstance(y, torch.Tensor), say(
                "the model must return a tensor of probabilities\n  it returned a {kind}", kind=type(y).__name__)
            assert y.shape == (batch, 1), say(
                "the model must give one score per image, shape (N, 1): AvgPool2d(8) takes the 8x8 maps to 1x1, "
                "Flatten makes (N, 256), Linear(256, 1) one score each\n  for a batch of {batch} images of 3x64x64 "
                "the output has shape {shape}", batch=batch, shape=tuple(y.shape))
            assert y.dtype == torch.float32, say("the model's output must be float32\n  its dtype is {dtype}",
                                                 dtype=y.dtype)
            assert bool(((y > 0) & (y < 1)).all()), say(PROBABILITIES, outputs=y.flatten().tolist())


INITIAL = N_("build the layers in the book's order with PyTorch's default initialisation, and draw no random numbers "
             "before the last convolution is built (the book's shape checks come after it): then "
             "torch.manual_seed(1) fixes the initial weights, and so the whole run")


def test_initial_weights_are_the_books_under_manual_seed_1(model):
    # The seed fixes the four convolutions, made first: the book's weights. The Linear layer comes after the book's
    # shape checks (`model(torch.ones((4, 3, 64, 64)))` in train mode: its dropout draws): PyTorch's default init.
    # Compared only where the layers are the book's and each call builds a new model, drawn from the caller's seed.
    with premise_first(lambda: layers_problem(model) or new_model_problem(model)):
        for case in model.cases("initial"):
            found, got, want = case.answer, case.answer["weighted"], book(model, "initial", *case.args)["weighted"]
            assert [(m["name"], m["shapes"]) for m in got] == [(m["name"], m["shapes"]) for m in want], say(
                "the model's layers with weights differ from the book's in kind or in the shapes of their weights, so "
                "their initial weights can't be compared (test_layers_match_the_book_in_order says which)\n  yours: "
                "{layers}", layers=", ".join(describe(m) for m in got))
            *convs, (got_fc, _want_fc) = zip(got, want)
            for i, (g, w) in enumerate(convs):
                for name, a, b in zip(("weight", "bias"), g["sha"], w["sha"]):
                    assert a == b, say("the convolutions' initial weights differ from the book's under "
                                       "torch.manual_seed(1): {initial}\n  the {name} of {layer} (convolution "
                                       "{index} of 4) differs", initial=_(INITIAL), name=name, layer=describe(g),
                                       index=i + 1)
            bound = 1 / got_fc["in_features"] ** 0.5
            weight, bias = (p.detach() for p in found["last"])
            spread = weight.std().item() if weight.numel() > 1 else 0.0
            small = weight.abs().max().item() <= bound and bias.abs().max().item() <= bound
            assert small and spread > 0.3 * bound, say(
                "the Linear layer's initial weights are not PyTorch's default initialisation (uniform in "
                "+-1/sqrt(in_features), here +-0.0625): don't re-initialise the layers, nn.Linear(256, 1) sets them\n"
                "  its weights range over [{low:.4f}, {high:.4f}] with a standard "
                "deviation of {spread:.4f}, its bias is {bias}",
                low=weight.min().item(), high=weight.max().item(), spread=spread, bias=bias.flatten().tolist())


def test_build_model_leaves_placement_to_the_caller(model):
    found = model.answer("built")
    assert not found["moves"], say(
        "build_model() called {moves} on the model: a model is built on the CPU and the "
        "caller moves it (`model.to(device)`, which moves the same object in place)", moves=", ".join(found["moves"]))
    devices = set(found["devices"])
    assert devices == {"cpu"}, say("a new model's parameters are on the CPU: build it there\n  they are on {devices}",
                                   devices=devices)


def new_model_problem(model) -> str | None:
    """Why two calls of build_model() do not give two new models, each with its own initial weights drawn from the
    caller's generator (None: they do). The premise of the check of the initial weights too."""
    found = model.answer("built")
    if found.get("same"):
        return _("build_model() returned the same object twice: training one would change the other. "
                 "Build the layers inside the function")
    if found.get("shared"):
        return _("two models from build_model() share parameter tensors: create new layers at each call, inside "
                 "the function")
    if found.get("same_weights"):
        return _("two calls of build_model() gave the same initial weights: it seeds the random generator itself "
                 "(torch.manual_seed inside), so every model is the same and the caller's generator, which "
                 "shuffling and Dropout draw from, starts over at each build. Seed once, outside, before building "
                 "(the book: torch.manual_seed(1), then the model)")
    return None


def test_each_call_builds_a_new_model(model):
    fail_if(new_model_problem(model))


def test_dropout_is_active_in_train_mode_only(model):
    with premise_first(lambda: layers_problem(model)):
        found = model.cases("dropout")[0].answer
        first = out(found["train"][0]).flatten()   # the premises: probabilities, and not one value for every image
        assert bool(((first > 0) & (first < 1)).all()), say(PROBABILITIES, outputs=first.tolist())
        assert first.numel() < 2 or not bool((first == first[0]).all()), say(
            "the model gives {value} for every image of the batch, whatever the image, so no layer before the last can "
            "show in its output (a Dropout neither)\n  outputs in train() mode: {outputs}", value=first[0].item(),
            outputs=first.tolist())
        assert not torch.equal(*map(out, found["train"])), _(
            "in train() mode two forward passes gave the same output: the model has no active Dropout(0.5) "
            "after the first two blocks")
        assert torch.equal(*map(out, found["eval"])), _(
            "in eval() mode the output changes between calls: nothing random may run in eval mode (nn.Dropout stops "
            "dropping there; a random op of your own does not)")
