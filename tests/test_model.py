"""Checks for exercise 3, model: the book's CNN, layer for layer.

The book (chapter 14) builds the smile classifier as one nn.Sequential; these
checks hold `build_model()` to it: the same layers in the same order, 388,673
parameters, an (N, 1) output of probabilities, and no device moves inside.

The book builds its CNN in notebook cells, with shape checks in between
(`model(torch.ones((4, 3, 64, 64)))` in train mode, whose dropout draws random
numbers): code that does the same is the book's model, and passes.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

import math

import pytest
import torch
from hypothesis import given
from torch import nn
from torch.nn.modules.utils import _pair

from kata.checks.book import BOOK_PARAMETERS, book_cnn
from kata.checks.messages import fail_if
from kata.i18n import N_, _, say
from kata.records.strategies import batch_sizes


def padding_of(conv: nn.Conv2d) -> tuple[int, int]:
    """A convolution's padding as numbers, however it was spelled: padding=1, (1, 1), 'same' (for a
    3x3 kernel with stride 1, one pixel on each side: the same layer as padding=1) or 'valid' (0)."""
    if conv.padding == "valid":
        return (0, 0)
    if conv.padding == "same":
        return tuple(d * (k - 1) // 2 if (d * (k - 1)) % 2 == 0 else -1
                     for k, d in zip(_pair(conv.kernel_size), _pair(conv.dilation)))
    return tuple(_pair(conv.padding))


def describe(layer: nn.Module) -> str:
    """A layer as a person would write it, with the settings that matter here (each in one spelling:
    kernel_size=3 and (3, 3), padding=1 and 'same' for a 3x3 kernel, are the same layer)."""
    name = type(layer).__name__
    if isinstance(layer, nn.Conv2d):
        (kh, kw), (ph, pw) = _pair(layer.kernel_size), padding_of(layer)
        extras = [f"dilation={layer.dilation}"] if _pair(layer.dilation) != (1, 1) else []
        extras += [f"groups={layer.groups}"] if layer.groups != 1 else []
        extras += [f"padding_mode={layer.padding_mode!r}"] if layer.padding_mode != "zeros" else []
        return (f"Conv2d({layer.in_channels} -> {layer.out_channels}, kernel_size={kh}{'' if kh == kw else f'x{kw}'}, "
                f"stride={_pair(layer.stride)[0]}, padding={ph}{'' if ph == pw else f'x{pw}'}, "
                f"bias={layer.bias is not None}{''.join(', ' + e for e in extras)})")
    if isinstance(layer, (nn.MaxPool2d, nn.AvgPool2d)):
        return (f"{name}(kernel_size={_pair(layer.kernel_size)[0]}, "
                f"stride={_pair(layer.stride or layer.kernel_size)[0]}, padding={_pair(layer.padding)[0]})")
    if isinstance(layer, nn.Dropout):
        return f"Dropout(p={layer.p})"
    if isinstance(layer, nn.Linear):
        return f"Linear({layer.in_features} -> {layer.out_features}, bias={layer.bias is not None})"
    if isinstance(layer, nn.Flatten):
        return f"Flatten(start_dim={layer.start_dim}, end_dim={layer.end_dim})"
    return f"{name}()"


def layers(net: nn.Module) -> list[nn.Module]:
    """The leaf layers in order (a nested nn.Sequential is looked into)."""
    return [m for m in net.modules() if not list(m.children())]


SHAPES = N_("the model can't take a batch of 3x64x64 images through its layers: a layer gets maps of a size it "
            "can't take (the book's sizes: each 3x3 convolution with padding 1 keeps the size, each max-pool halves "
            "it, 64 -> 32 -> 16 -> 8, and the average pool takes the 8x8 maps to 1x1, so Linear gets 256 numbers)\n"
            "  layer {index}, {layer}, fails on {shape}; the shapes before it: {trail}\n  (PyTorch: {error})")


def forward(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """net(x); a layer that can't take what it gets fails the check saying which, and the shapes."""
    __tracebackhide__ = True
    try:
        return net(x)
    except RuntimeError as err:
        error = err
    trail, out = [tuple(x.shape)], x
    for index, layer in enumerate(layers(net)):
        try:
            out = layer(out)
        except RuntimeError as err:
            shown = " -> ".join("x".join(map(str, shape[1:])) for shape in trail)
            fail_if(say(SHAPES, index=index, layer=describe(layer), shape="x".join(map(str, out.shape[1:])),
                        trail=shown, error=str(err).splitlines()[0]))
        if tuple(out.shape) != trail[-1]:
            trail.append(tuple(out.shape))
    raise error


@pytest.mark.audit("kind")
def test_build_model_returns_an_nn_sequential(model):
    net = model.build_model()
    assert isinstance(net, nn.Sequential), say(
        "build_model() must return the book's nn.Sequential (one stack of layers, called in order)\n"
        "  it returned a {kind}", kind=type(net).__name__)


OTHER_LAYER = N_("layer {index} is {got}, the book has {want} there.\nThe book's layers, in order:\n  {book}")
FEWER_LAYERS = N_("build_model() has {found} layers, the book's CNN has {expected}: missing {missing}")
MORE_LAYERS = N_("build_model() has {found} layers, the book's CNN has {expected}: extra {extra}")


@pytest.mark.audit("layers", "declared")
def test_layers_match_the_book_in_order(model):
    found = [describe(m) for m in layers(model.build_model())]
    expected = [describe(m) for m in layers(book_cnn())]
    for i, (want, got) in enumerate(zip(expected, found)):
        assert got == want, say(OTHER_LAYER, index=i, got=got, want=want, book="\n  ".join(expected))
    assert len(found) >= len(expected), say(FEWER_LAYERS, found=len(found), expected=len(expected),
                                            missing=expected[len(found):])
    assert len(found) == len(expected), say(MORE_LAYERS, found=len(found), expected=len(expected),
                                            extra=found[len(expected):])


@pytest.mark.audit("count")
def test_parameter_count_is_the_books_388673(model):
    n = sum(p.numel() for p in model.build_model().parameters())
    assert n == BOOK_PARAMETERS, say(
        "the model has {n:,} parameters, the book's CNN has {book:,}: check the "
        "channel counts (3->32->64->128->256), kernel_size=3, and Linear(256, 1)", n=n, book=BOOK_PARAMETERS)


@given(batch=batch_sizes)
@pytest.mark.audit("output")
def test_output_is_one_probability_per_image(model, batch):
    torch.manual_seed(batch)
    net = model.build_model().eval()
    x = torch.rand(batch, 3, 64, 64)
    with torch.no_grad():
        y = forward(net, x)
    assert isinstance(y, torch.Tensor), say(
        "the model must return a tensor of probabilities\n  it returned a {kind}", kind=type(y).__name__)
    assert y.shape == (batch, 1), say(
        "the model must give one score per image, shape (N, 1): AvgPool2d(8) takes the 8x8 maps to 1x1, "
        "Flatten makes (N, 256), Linear(256, 1) one score each\n  for a batch of {batch} images of 3x64x64 "
        "the output has shape {shape}", batch=batch, shape=tuple(y.shape))
    assert y.dtype == torch.float32, say("the model's output must be float32\n  its dtype is {dtype}", dtype=y.dtype)
    assert bool(((y > 0) & (y < 1)).all()), say(
        "the model's outputs must be probabilities in (0, 1): the last layer is nn.Sigmoid(), so that BCELoss "
        "gets probabilities\n  outputs: {outputs}", outputs=y.flatten().tolist())


def weighted(net: nn.Module) -> list[nn.Module]:
    """The leaf layers that hold parameters, in order."""
    return [m for m in layers(net) if list(m.parameters(recurse=False))]


INITIAL = N_("build the layers in the book's order with PyTorch's default initialisation, and draw no random numbers "
             "before the last convolution is built (the book's shape checks come after it): then "
             "torch.manual_seed(1) fixes the initial weights, and so the whole run")


@pytest.mark.audit("initial.convolutions", "initial.linear")
def test_initial_weights_are_the_books_under_manual_seed_1(model):
    # What the seed fixes: the four convolutions, made first and in order, get exactly the
    # book's weights. The Linear layer is made after the book's shape checks, whose dropout
    # (train mode) draws random numbers, so its weights depend on how the shapes were checked:
    # it must hold PyTorch's default initialisation, uniform in +-1/sqrt(256).
    torch.manual_seed(1)
    got = weighted(model.build_model())
    torch.manual_seed(1)
    want = weighted(book_cnn())
    def shapes(layers_):
        return [(type(m).__name__, [tuple(p.shape) for p in m.parameters(recurse=False)]) for m in layers_]

    assert shapes(got) == shapes(want), say(
        "the model's layers with weights differ from the book's in kind or in the shapes of their weights, so "
        "their initial weights can't be compared (test_layers_match_the_book_in_order says which)\n  yours: "
        "{layers}", layers=", ".join(describe(m) for m in got))
    *convs, (got_fc, want_fc) = zip(got, want)
    for i, (g, w) in enumerate(convs):
        for name in ("weight", "bias"):
            a, b = getattr(g, name), getattr(w, name)
            assert a is not None and torch.equal(a.detach(), b.detach()), say(
                "the convolutions' initial weights differ from the book's under torch.manual_seed(1): {initial}\n"
                "  the {name} of {layer} (convolution {index} of 4) differs",
                initial=_(INITIAL), name=name, layer=describe(g), index=i + 1)
    bound = 1 / math.sqrt(got_fc.in_features)
    weight, bias = got_fc.weight.detach(), got_fc.bias.detach()
    spread = weight.std().item() if weight.numel() > 1 else 0.0
    assert weight.abs().max().item() <= bound and bias.abs().max().item() <= bound and spread > 0.3 * bound, say(
        "the Linear layer's initial weights are not PyTorch's default initialisation (uniform in "
        "+-1/sqrt(in_features), here +-0.0625): don't re-initialise the layers, nn.Linear(256, 1) sets them\n"
        "  its weights range over [{low:.4f}, {high:.4f}] with a standard "
        "deviation of {spread:.4f}, its bias is {bias}",
        low=weight.min().item(), high=weight.max().item(), spread=spread, bias=bias.flatten().tolist())


@pytest.mark.audit("placement", observed=N_("whether build_model moves the model itself (.to, .cuda)"))
def test_build_model_leaves_placement_to_the_caller(model, monkeypatch):
    moves = []
    for method in ("to", "cuda", "cpu", "to_empty"):
        original = getattr(nn.Module, method)

        def spy(self, *args, _method=method, _original=original, **kwargs):
            moves.append(f".{_method}({', '.join(map(repr, args))})")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(nn.Module, method, spy)
    net = model.build_model()
    monkeypatch.undo()
    assert not moves, say(
        "build_model() called {moves} on the model: a model is built on the CPU and the "
        "caller moves it (`model.to(device)`, which moves the same object in place)", moves=", ".join(moves))
    devices = {p.device.type for p in net.parameters()}
    assert devices == {"cpu"}, say("a new model's parameters are on the CPU: build it there\n  they are on {devices}",
                                   devices=devices)


@pytest.mark.audit("fresh")
def test_each_call_builds_a_new_model(model):
    first, second = model.build_model(), model.build_model()
    assert first is not second, _(
        "build_model() returned the same object twice: training one would change the other. "
        "Build the layers inside the function")
    shared = {id(p) for p in first.parameters()} & {id(p) for p in second.parameters()}
    assert not shared, _(
        "two models from build_model() share parameter tensors: create new layers at each call, inside the "
        "function")


@pytest.mark.audit("dropout")
def test_dropout_is_active_in_train_mode_only(model):
    net = model.build_model()
    x = torch.rand(4, 3, 64, 64)
    torch.manual_seed(0)
    net.train()
    a, b = forward(net, x), forward(net, x)
    assert not torch.equal(a, b), _(
        "in train() mode two forward passes gave the same output: the model has no active Dropout(0.5) "
        "after the first two blocks")
    net.eval()
    with torch.no_grad():
        c, d = forward(net, x), forward(net, x)
    assert torch.equal(c, d), _(
        "in eval() mode the output changes between calls: nothing random may run in eval mode (nn.Dropout stops "
        "dropping there; a random op of your own does not)")
