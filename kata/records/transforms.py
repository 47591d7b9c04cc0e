"""A torchvision transform as the book would write it, step by step: what a record says of a learner's
transform, and what a check says of the book's (exercise 2, data), with one normaliser for both."""

from __future__ import annotations

__all__ = ["composes", "steps"]


def composes() -> tuple[type, ...]:
    """torchvision's two Compose classes (transforms and transforms.v2)."""
    from torchvision import transforms
    from torchvision.transforms import v2

    return transforms.Compose, v2.Compose


def _pair(size) -> list[int]:
    """A size as [height, width]."""
    if isinstance(size, int):
        return [size, size]
    size = list(size)
    return [int(size[0]), int(size[0])] if len(size) == 1 else [int(v) for v in size]


def steps(transform) -> list[str]:
    """Each step of a transform as the book would write it, with sizes normalised
    (`CenterCrop(178)` is `CenterCrop([178, 178])`; `Resize(64)` right after a square
    crop is `Resize([64, 64])`) and any setting that differs from the default shown."""
    import torch

    inner = list(transform.transforms) if isinstance(transform, composes()) else [transform]
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
