"""Hypothesis strategies shared by the checks (one module, as in minitorch)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from PIL import Image

# The book's pipeline needs images at least 178 pixels on each side
# (RandomCrop/CenterCrop to 178x178); CelebA's aligned faces are 178x218.
image_sizes = st.tuples(st.integers(178, 260), st.integers(178, 260))


@st.composite
def pil_images(draw, sizes=image_sizes) -> Image.Image:
    """RGB images of random size and content (noise on a random colour)."""
    width, height = draw(sizes)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=3)
    noise = rng.integers(-40, 41, size=(height, width, 3))
    pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels, "RGB")


def attribute_vectors(n_attributes: int = 40):
    """CelebA attribute vectors as torchvision gives them: 0/1 int64 tensors."""
    import torch

    return st.lists(st.integers(0, 1), min_size=n_attributes, max_size=n_attributes).map(
        lambda bits: torch.tensor(bits, dtype=torch.int64))


batch_sizes = st.integers(min_value=1, max_value=6)
