"""A synthetic CelebA: cartoon faces drawn on the fly, in CelebA's real layout.

The kata's smile classifier comes from chapter 14 of Raschka's *Machine
Learning with PyTorch and Scikit-Learn*, trained on CelebA (202,599 celebrity
faces, 40 yes/no attributes each). CelebA is 1.4 GB behind a Google Drive quota,
so this package draws a stand-in that needs no download:

    from kata.data import synth
    synth.generate("data")        # writes data/celeba/..., returns that folder

`generate` writes exactly what torchvision.datasets.CelebA reads (the layout
is in kata.data.layout): the 178x218 JPEGs in img_align_celeba/, the five text
files, and the marker KATA_SYNTHETIC.json, written last.

How a face is made, one module per step:

1. Plan (planning.py: `plan`). Every image gets a random "person" (skin, hair,
   face shape, ...: a few photos share one, as in CelebA) and a random "photo"
   (pose, expression, glasses, hat, background, ...). Each image's random
   numbers come from its own generator, seeded by (seed, image number), so the
   result is the same whatever the number of worker processes.
2. Label (planning.py). The 40 attributes are read off the plan: Eyeglasses is
   +1 exactly when glasses are drawn, and so on. Smiling is +1 for about 48% of
   faces.
3. Draw (geometry.py, drawing.py: `render`). Shapes are placed in "face
   coordinates" (origin between the eyes, y pointing down, about one unit per
   pixel) and mapped to the image by one rotation + scale + shift, so the
   landmarks (`landmarks`) are the drawn positions.
4. Write (writing.py: `generate`): the images on worker processes, the text
   files, the marker; a set already there is reused, an unfinished one resumed.

What makes the task learnable: a smile is a wide open laugh, a big dark mouth
under a band of upper teeth, with upturned corners, smile folds and (often)
squinting eyes; a non-smile is a narrow closed mouth, or a small toothless
opening. The smile is drawn big on purpose: the book's CNN, trained on 2,000
images, stays at chance for many epochs unless the smile changes a good 5% of
the 178x178 crop (a thin smiling arc, or a 34x20 band of teeth, is not enough).
What keeps it honest: faint smiles, hands or objects over the mouth, and a few
wrong labels (CelebA's labels are not perfect either), so that the book's CNN
reaches about 0.93-0.95 validation accuracy, not 1.0.

Drawing imports numpy and PIL, never torch.
"""

from kata.data.synth.drawing import render
from kata.data.synth.geometry import bbox, landmarks, mouth_outline
from kata.data.synth.planning import LABEL_NOISE, OCCLUDED, plan
from kata.data.synth.writing import GENERATOR, VERSION, generate

__all__ = [
    "generate", "plan", "render", "landmarks", "bbox", "mouth_outline",
    "GENERATOR", "VERSION", "LABEL_NOISE", "OCCLUDED",
]
