"""A synthetic CelebA: cartoon faces drawn on the fly, in CelebA's real layout.

The kata's smile classifier comes from chapter 14 of Raschka's *Machine
Learning with PyTorch and Scikit-Learn*, trained on CelebA (202,599 celebrity
faces, 40 yes/no attributes each). CelebA is 1.4 GB behind a Google Drive quota,
so this module draws a stand-in that needs no download:

    from kata import synth
    synth.generate("data")        # writes data/celeba/..., returns that folder

`generate` writes exactly what torchvision.datasets.CelebA reads:

    ROOT/celeba/img_align_celeba/000001.jpg ...   178 x 218 RGB JPEGs
    ROOT/celeba/list_attr_celeba.txt              the 40 attributes, +1 / -1
    ROOT/celeba/list_eval_partition.txt           0 train, 1 valid, 2 test
    ROOT/celeba/identity_CelebA.txt               which person each face is
    ROOT/celeba/list_bbox_celeba.txt              the face's bounding box
    ROOT/celeba/list_landmarks_align_celeba.txt   eyes, nose, mouth corners
    ROOT/celeba/KATA_SYNTHETIC.json               "drawn by kata", written last

How a face is made (read `_sample_person`, `_sample_photo` and `_render`):

1. Plan. Every image gets a random "person" (skin, hair, face shape, ...: a
   few photos share one, as in CelebA) and a random "photo" (pose, expression,
   glasses, hat, background, ...). Each image's random numbers come from its
   own generator, seeded by (seed, image number), so the result is the same
   whatever the number of worker processes.
2. Label. The 40 attributes are read off the plan: Eyeglasses is +1 exactly
   when glasses are drawn, and so on. Smiling is +1 for about 48% of faces.
3. Draw. Shapes are placed in "face coordinates" (origin between the eyes,
   y pointing down, about one unit per pixel) and mapped to the image by one
   rotation + scale + shift, so the landmarks are the drawn positions.

What makes the task learnable: a smile is a wide open laugh, a big dark mouth
under a band of upper teeth, with upturned corners, smile folds and (often)
squinting eyes; a non-smile is a narrow closed mouth, or a small toothless
opening. The smile is drawn big on purpose: the book's CNN, trained on 2,000
images, stays at chance for many epochs unless the smile changes a good 5% of
the 178x178 crop (a thin smiling arc, or a 34x20 band of teeth, is not enough).
What keeps it honest: faint smiles, hands or objects over the mouth, and a few
wrong labels (CelebA's labels are not perfect either), so that the book's CNN
reaches about 0.93-0.95 validation accuracy, not 1.0.
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

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

# --- constants --------------------------------------------------------------

GENERATOR = "kata.synth"
VERSION = 1  # bump whenever the drawing or the labels change: caches are keyed on it
MARKER_NAME = "KATA_SYNTHETIC.json"  # in ROOT/celeba/, written last: "this set is complete"
PARTIAL_NAME = "KATA_SYNTHETIC.partial.json"  # in ROOT/celeba/ while a set is being written

WIDTH, HEIGHT = 178, 218  # CelebA's aligned and cropped faces
IMAGE_FOLDER = "img_align_celeba"
TEXT_FILES = (
    "list_attr_celeba.txt",
    "identity_CelebA.txt",
    "list_bbox_celeba.txt",
    "list_landmarks_align_celeba.txt",
    "list_eval_partition.txt",
)

# The 40 attributes, in the order of CelebA's list_attr_celeba.txt.
# (kata.celeba re-exports this tuple; it lives here so `kata data` need not import torch.)
ATTRIBUTE_NAMES = (
    "5_o_Clock_Shadow", "Arched_Eyebrows", "Attractive", "Bags_Under_Eyes", "Bald",
    "Bangs", "Big_Lips", "Big_Nose", "Black_Hair", "Blond_Hair",
    "Blurry", "Brown_Hair", "Bushy_Eyebrows", "Chubby", "Double_Chin",
    "Eyeglasses", "Goatee", "Gray_Hair", "Heavy_Makeup", "High_Cheekbones",
    "Male", "Mouth_Slightly_Open", "Mustache", "Narrow_Eyes", "No_Beard",
    "Oval_Face", "Pale_Skin", "Pointy_Nose", "Receding_Hairline", "Rosy_Cheeks",
    "Sideburns", "Smiling", "Straight_Hair", "Wavy_Hair", "Wearing_Earrings",
    "Wearing_Hat", "Wearing_Lipstick", "Wearing_Necklace", "Wearing_Necktie", "Young",
)
SMILING = ATTRIBUTE_NAMES.index("Smiling")  # 31, the book's label

SPLITS = ("train", "valid", "test")  # list_eval_partition.txt codes 0, 1, 2

# How often the label disagrees with the picture, and how often the mouth is hidden.
LABEL_NOISE = 0.02
OCCLUDED = 0.02

# Random-number "streams": one generator per (seed, stream, number).
_PEOPLE, _PHOTOS, _PIXELS, _IDENTITIES = 1, 2, 3, 4


# --- planning: who is in each photo, and what the photo shows ---------------

SKIN_TONES = np.array([(255, 226, 200), (241, 196, 166), (226, 174, 140),
                       (200, 140, 104), (160, 106, 76), (112, 74, 52)], float)
HAIR_COLOURS = {  # name: RGB; only black, blond, brown and gray are attributes
    "black": (44, 34, 32), "brown": (100, 64, 38), "blond": (226, 196, 124),
    "gray": (172, 170, 168), "red": (150, 72, 36), "dark": (72, 50, 36),
}
LIPSTICKS = np.array([(190, 24, 52), (160, 30, 74), (206, 62, 92), (132, 22, 40), (176, 60, 60)], float)
IRISES = np.array([(70, 44, 26), (40, 28, 20), (70, 110, 150), (80, 120, 80)], float)


def _jitter(rng, colour, amount):
    """A colour moved a little in each channel (kept in 0..255)."""
    return np.clip(np.asarray(colour, float) + rng.normal(0, amount, 3), 0, 255)


def _muted(colour, amount):
    """A colour moved towards mid-grey (amount 0: unchanged, 1: grey)."""
    return np.asarray(colour, float) * (1 - amount) + 128 * amount


def _sample_person(rng) -> dict:
    """Everything that stays the same across one person's photos."""
    male = rng.random() < 0.42
    young = rng.random() < 0.77
    pale = rng.random() < 0.04
    tone = rng.uniform(0, 0.6) if pale else rng.uniform(0, len(SKIN_TONES) - 1)
    lo = int(tone)
    skin = SKIN_TONES[lo] + (SKIN_TONES[min(lo + 1, len(SKIN_TONES) - 1)] - SKIN_TONES[lo]) * (tone - lo)
    if pale:
        skin = skin + (255 - skin) * 0.45
    if not young and rng.random() < 0.35:
        hair = "gray"
    else:
        hair = rng.choice(["black", "brown", "blond", "red", "dark"],
                          p=[0.30, 0.26, 0.06, 0.05, 0.33] if male else [0.26, 0.26, 0.27, 0.06, 0.15])
    bald = male and rng.random() < (0.04 if young else 0.15)
    chubby = rng.random() < 0.06
    return dict(
        male=male, young=young, pale=pale, skin=_jitter(rng, skin, 6), hair=hair,
        hair_rgb=_jitter(rng, HAIR_COLOURS[hair], 10),
        bald=bald,
        receding=not bald and male and rng.random() < (0.08 if young else 0.35),
        long_hair=not bald and rng.random() < (0.15 if male else 0.85),
        wavy=rng.random() < 0.32, straight=rng.random() < 0.31,  # neither: "some other" hair
        bangs=not bald and rng.random() < (0.07 if male else 0.22),
        face_w=rng.uniform(0.93, 1.03) * (1.12 if chubby else 1.0),
        face_h=rng.uniform(0.96, 1.04),
        chubby=chubby, oval=rng.random() < 0.28,
        double_chin=rng.random() < (0.45 if chubby else 0.03),
        eye_sep=rng.uniform(17.5, 20.5), narrow_eyes=rng.random() < 0.10,
        iris=_jitter(rng, IRISES[rng.integers(len(IRISES))], 8),
        big_nose=rng.random() < (0.35 if male else 0.12), pointy_nose=rng.random() < 0.28,
        big_lips=rng.random() < (0.15 if male else 0.32),
        bushy_brows=rng.random() < (0.28 if male else 0.04),
        arched_brows=not male and rng.random() < 0.45,
        beard=rng.choice(["none", "stubble", "goatee", "mustache", "full"],
                         p=[0.58, 0.20, 0.09, 0.05, 0.08]) if male else "none",
        sideburns=male and rng.random() < 0.08,
        glasses_often=rng.random() < 0.08,
        makeup_often=not male and rng.random() < 0.65,
        attractive=rng.random() < (0.62 if young else 0.25),
    )


# The mouth's shapes. Smiling faces: "grin" (a wide open laugh: dark inside, a
# band of upper teeth) or "faint" (a slight closed smile: honestly hard to see).
# The others: "neutral" (closed), "open" (slightly open, no teeth), "oh" (round,
# open, no teeth), and now and then a "faint" one too.
SMILES = (("grin", 0.95), ("faint", 0.05))
NON_SMILES = (("neutral", 0.63), ("open", 0.30), ("oh", 0.05), ("faint", 0.02))


def _pick(rng, table):
    names, weights = zip(*table)
    return names[rng.choice(len(names), p=weights)]


def _sample_photo(rng, person: dict) -> dict:
    """Everything that changes from one photo to the next, and the 40 labels."""
    male, young = person["male"], person["young"]
    smiling = rng.random() < 0.48
    mouth = _pick(rng, SMILES if smiling else NON_SMILES)
    grin = mouth == "grin"
    width = {"grin": rng.uniform(62, 72), "faint": rng.uniform(31, 37),
             "neutral": rng.uniform(25, 33), "open": rng.uniform(25, 33), "oh": rng.uniform(18, 24)}[mouth]
    upturn = {"grin": rng.uniform(3, 7), "faint": rng.uniform(1, 2.5)}.get(mouth, rng.uniform(-2, 0.5))
    opening = {"grin": rng.uniform(29, 35), "open": rng.uniform(4, 7), "oh": rng.uniform(7, 10)}.get(mouth, 0.0)
    makeup = person["makeup_often"] and rng.random() < 0.85
    lipstick = not male and (makeup or rng.random() < 0.25)
    high_cheeks = rng.random() < (0.8 if grin else 0.2)
    beard = person["beard"]
    photo = dict(
        smiling=smiling, mouth=mouth, mouth_w=width, upturn=upturn, opening=opening,
        teeth=rng.uniform(0.18, 0.26), squint=grin and rng.random() < 0.6,
        occluder=rng.choice(["hand", "object"]) if rng.random() < OCCLUDED else None,
        label_flip=rng.random() < LABEL_NOISE,
        # pose: where the eyes' midpoint is, how big the face is, the head's tilt
        cx=WIDTH / 2 + rng.uniform(-9, 9), cy=rng.uniform(86, 96),
        scale=rng.uniform(0.92, 1.06), tilt=rng.uniform(-9, 9),
        # the background: a gradient between two muted colours, a few blobs
        background=[_muted(rng.uniform(25, 230, 3), rng.uniform(0.3, 0.7)) for _ in range(2)],
        gradient=rng.uniform(0, 2 * math.pi), blobs=rng.integers(0, 4),
        light=rng.uniform(0, 0.25), light_dir=rng.uniform(0, 2 * math.pi), exposure=rng.uniform(0.88, 1.12),
        clothes=rng.uniform(40, 220, 3),
        glasses=(rng.random() < 0.8) if person["glasses_often"] else (rng.random() < 0.015),
        sunglasses=rng.random() < 0.2,
        frame=_jitter(rng, rng.choice([20, 90, 160]) * np.ones(3), 20),
        hat=rng.random() < 0.05, hat_style=rng.integers(2), hat_rgb=_jitter(rng, rng.uniform(20, 230, 3), 0),
        makeup=makeup, lipstick=lipstick, lip_rgb=_jitter(rng, LIPSTICKS[rng.integers(len(LIPSTICKS))], 10),
        shadow_rgb=_jitter(rng, rng.choice([(110, 70, 120), (120, 80, 60), (70, 90, 130)]), 10),
        high_cheeks=high_cheeks, rosy=rng.random() < 0.07,
        bags=rng.random() < (0.15 if young else 0.45),
        earrings=rng.random() < (0.02 if male else 0.35),
        necklace=rng.random() < (0.02 if male else 0.22),
        necktie=male and rng.random() < 0.14, tie_rgb=_jitter(rng, rng.uniform(20, 200, 3), 0),
        blurry=rng.random() < 0.05, blur=rng.uniform(0.25, 0.6) if rng.random() < 0.5 else 0.0,
        noise=rng.uniform(1.5, 7.0), quality=int(rng.integers(60, 96)),
    )
    photo["narrow_eyes"] = person["narrow_eyes"] or photo["squint"]
    on = {
        "5_o_Clock_Shadow": beard == "stubble", "Arched_Eyebrows": person["arched_brows"],
        "Attractive": person["attractive"], "Bags_Under_Eyes": photo["bags"], "Bald": person["bald"],
        "Bangs": person["bangs"] and not photo["hat"], "Big_Lips": person["big_lips"],
        "Big_Nose": person["big_nose"], "Black_Hair": person["hair"] == "black",
        "Blond_Hair": person["hair"] == "blond", "Blurry": photo["blurry"],
        "Brown_Hair": person["hair"] == "brown", "Bushy_Eyebrows": person["bushy_brows"],
        "Chubby": person["chubby"], "Double_Chin": person["double_chin"], "Eyeglasses": photo["glasses"],
        "Goatee": beard == "goatee", "Gray_Hair": person["hair"] == "gray", "Heavy_Makeup": makeup,
        "High_Cheekbones": high_cheeks, "Male": male, "Mouth_Slightly_Open": opening > 0,
        "Mustache": beard == "mustache", "Narrow_Eyes": photo["narrow_eyes"],
        "No_Beard": beard in ("none", "stubble"), "Oval_Face": person["oval"], "Pale_Skin": person["pale"],
        "Pointy_Nose": person["pointy_nose"], "Receding_Hairline": person["receding"],
        "Rosy_Cheeks": photo["rosy"], "Sideburns": person["sideburns"],
        "Smiling": smiling != photo["label_flip"],  # a few labels are wrong, as in any real data set
        "Straight_Hair": person["straight"] and not person["wavy"] and not person["bald"],
        "Wavy_Hair": person["wavy"] and not person["bald"], "Wearing_Earrings": photo["earrings"],
        "Wearing_Hat": photo["hat"], "Wearing_Lipstick": lipstick, "Wearing_Necklace": photo["necklace"],
        "Wearing_Necktie": photo["necktie"], "Young": young,
    }
    photo["attrs"] = tuple(1 if on[name] else -1 for name in ATTRIBUTE_NAMES)
    return photo


def _identities(counts: dict, seed: int) -> list[int]:
    """The person (1, 2, ...) in each image: a few photos each, never across splits (as in CelebA)."""
    rng = np.random.default_rng([seed, _IDENTITIES])
    out, next_id = [], 1
    for split in SPLITS:
        n, ids = counts[split], []
        while len(ids) < n:
            ids += [next_id] * int(rng.integers(1, 7))  # 1..6 photos per person, 3.5 on average
            next_id += 1
        ids = ids[:n]
        rng.shuffle(ids)  # a person's photos are scattered through the split
        out += ids
    return out


def _jobs(counts: dict, seed: int) -> list[tuple[int, int, int]]:
    """(index, identity, split) of every image, in file order."""
    identities = _identities(counts, seed)
    splits = [code for code, split in enumerate(SPLITS) for _ in range(counts[split])]
    return list(zip(range(len(identities)), identities, splits))


def _plan_face(seed: int, index: int, identity: int, split: int, people: dict) -> dict:
    """The plan of one image: its person (shared through `people`, a cache) and its photo."""
    if identity not in people:
        people[identity] = _sample_person(np.random.default_rng([seed, _PEOPLE, identity]))
    photo = _sample_photo(np.random.default_rng([seed, _PHOTOS, index]), people[identity])
    return dict(index=index, filename=f"{index + 1:06d}.jpg", split=split, identity=identity,
                attrs=photo.pop("attrs"), person=people[identity], photo=photo, seed=seed)


def plan(n_train: int, n_valid: int = 0, n_test: int = 0, seed: int = 0) -> list[dict]:
    """The plan of every image, without drawing anything (cheap: use it to study the labels).

    Item i describes image i + 1 ("000001.jpg" is item 0): its file name, split
    (0 train, 1 valid, 2 test), identity, the 40 attributes (``attrs``, +1/-1 in
    ATTRIBUTE_NAMES order), and the person's and photo's drawing parameters.
    `generate` draws exactly these faces.
    """
    counts = _check_counts(n_train, n_valid, n_test)
    seed = _check_seed(seed)
    people: dict[int, dict] = {}
    return [_plan_face(seed, *job, people) for job in _jobs(counts, seed)]


# --- geometry: face coordinates -> image pixels ------------------------------

# Face coordinates (units ~ pixels at scale 1; y points down):
EYE_Y = 0.0  # eyes on the x axis, at +-eye_sep
BROW_Y = -12.0
NOSE_Y = 24.0  # nose tip
MOUTH_Y = 38.0  # centre of a closed mouth
FACE_CY, FACE_RX, FACE_RY = 18.0, 50.0, 64.0  # the face oval

_YS = np.arange(HEIGHT, dtype=np.float32)[:, None]  # each pixel's row ...
_XS = np.arange(WIDTH, dtype=np.float32)[None, :]  # ... and column
_CIRCLE = np.stack([np.cos(np.linspace(0, 2 * np.pi, 40, endpoint=False)),
                    np.sin(np.linspace(0, 2 * np.pi, 40, endpoint=False))], axis=1)


def _bezier(p0, mid, p2, n=12):
    """Points of the smooth curve from p0 to p2 that passes through mid halfway."""
    p0, mid, p2 = (np.asarray(p, float) for p in (p0, mid, p2))
    control = 2 * mid - (p0 + p2) / 2
    t = np.linspace(0, 1, n)[:, None]
    return (1 - t) ** 2 * p0 + 2 * t * (1 - t) * control + t ** 2 * p2


def _ellipse(cx, cy, rx, ry):
    return _CIRCLE * (rx, ry) + (cx, cy)


def _face_shape(person):
    return FACE_RX * person["face_w"] * (0.94 if person["oval"] else 1.0), FACE_RY * person["face_h"] * (
        1.06 if person["oval"] else 1.0)


def _mouth_points(photo):
    """The mouth's outline in face coordinates: (left corner, right corner, upper edge, lower edge)."""
    w, u, kind = photo["mouth_w"], photo["upturn"], photo["mouth"]
    left, right = np.array([-w / 2, MOUTH_Y - u]), np.array([w / 2, MOUTH_Y - u])
    if kind == "grin":  # a wide "D": upper edge nearly flat, lower edge half an ellipse
        upper = _bezier(left, (0, MOUTH_Y - u + 2.5), right)
        t = np.linspace(math.pi, 0, 16)
        lower = np.stack([w / 2 * np.cos(t), MOUTH_Y - u + photo["opening"] * np.sin(t)], 1)
    elif kind == "faint":  # closed lips along a shallow U
        upper = lower = _bezier(left, (0, MOUTH_Y + 3), right)
    elif kind == "oh":
        ellipse = _ellipse(0, MOUTH_Y + 3, w / 2, photo["opening"])
        return ellipse[20], ellipse[0], ellipse[20:][::-1], ellipse[:21]
    else:  # neutral / open: a nearly straight line, corners level or slightly down
        upper = _bezier(left, (0, MOUTH_Y - 1), right)
        lower = _bezier(left, (0, MOUTH_Y - 1 + photo["opening"]), right)
    return left, right, upper, lower


def _placement(face):
    """The map from face coordinates to image pixels: (2x2 matrix, shift). Rotation by the tilt, then scale."""
    p = face["photo"]
    a = math.radians(p["tilt"])
    matrix = p["scale"] * np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return matrix, np.array([p["cx"], p["cy"]])


def _to_image(face, points):
    matrix, shift = _placement(face)
    return np.asarray(points, float) @ matrix.T + shift


class _Pen:
    """Draws shapes given in face coordinates onto the image."""

    def __init__(self, image, face):
        self.draw = ImageDraw.Draw(image, "RGBA")  # RGBA: fills with an alpha are blended
        self.matrix, self.shift = _placement(face)
        self.scale = face["photo"]["scale"]

    def _xy(self, points):
        return (np.asarray(points, float) @ self.matrix.T + self.shift).ravel().tolist()

    def _width(self, width):
        return max(1, round(width * self.scale))

    def polygon(self, points, fill, outline=None, width=1.0):
        self.draw.polygon(self._xy(points), fill=_ink(fill), outline=_ink(outline), width=self._width(width))

    def ellipse(self, cx, cy, rx, ry, fill, outline=None, width=1.0):
        self.polygon(_ellipse(cx, cy, rx, ry), fill, outline, width)

    def line(self, points, fill, width=1.0):
        self.draw.line(self._xy(points), fill=_ink(fill), width=self._width(width), joint="curve")


def _ink(colour):
    """(r, g, b) or (r, g, b, alpha) floats -> PIL's integer tuple."""
    return None if colour is None else tuple(min(max(int(c + 0.5), 0), 255) for c in colour)


def _shade(colour, factor, alpha=None):
    rgb = tuple(np.clip(np.asarray(colour[:3], float) * factor, 0, 255))
    return rgb if alpha is None else (*rgb, alpha)


def _mix(a, b, t):
    return tuple(np.asarray(a[:3], float) * (1 - t) + np.asarray(b[:3], float) * t)


def landmarks(face) -> list[int]:
    """The 10 numbers of list_landmarks_align_celeba.txt: where the eyes, nose tip and mouth corners are drawn.

    As in CelebA, "left" means the image's left (smaller x).
    """
    es = face["person"]["eye_sep"]
    left, right, _, _ = _mouth_points(face["photo"])
    points = _to_image(face, [(-es, EYE_Y), (es, EYE_Y), (0, NOSE_Y), left, right])
    return [int(round(v)) for v in points.ravel()]


def mouth_outline(face) -> np.ndarray:
    """Where the mouth is drawn: its outline in image pixels, an (n, 2) array of (x, y).

    (Lips add up to 3 pixels around it.) The tests use it to check that every
    mouth stays inside rows 40..177, which every 178-row crop of the book keeps.
    """
    _, _, upper, lower = _mouth_points(face["photo"])
    return _to_image(face, np.concatenate([upper, lower]))


def bbox(face) -> list[int]:
    """x_1 y_1 width height of the face oval in the image. (CelebA's boxes refer to its uncropped
    photos; ours refer to the image itself.)"""
    rx, ry = _face_shape(face["person"])
    points = _to_image(face, _ellipse(0, FACE_CY, rx, ry))
    x0, y0 = np.floor(points.min(axis=0)).astype(int)
    x1, y1 = np.ceil(points.max(axis=0)).astype(int)
    return [int(x0), int(y0), int(x1 - x0), int(y1 - y0)]


# --- drawing ------------------------------------------------------------------


def _ramp(angle):
    """For each pixel, its distance from the image centre along the direction `angle` (a linear ramp)."""
    return (_XS - WIDTH / 2) * math.cos(angle) + (_YS - HEIGHT / 2) * math.sin(angle)


def _background(photo, rng):
    """A two-colour gradient in a random direction, with a few soft blobs."""
    t = _ramp(photo["gradient"])
    t = (t - t.min()) / (t.max() - t.min())
    a, b = photo["background"]
    image = Image.merge("RGB", [Image.fromarray((a[c] + (b[c] - a[c]) * t).astype(np.uint8)) for c in range(3)])
    draw = ImageDraw.Draw(image, "RGBA")
    for _ in range(photo["blobs"]):
        cx, cy, r = rng.uniform(0, WIDTH), rng.uniform(0, HEIGHT), rng.uniform(15, 60)
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=_ink((*rng.uniform(25, 230, 3), 110)))
    return image


def _draw_hair(pen, person, photo, rx, ry, layer):
    """Hair: 'back' is drawn behind the face (long hair, the head's outline), 'front' over the forehead."""
    colour = person["hair_rgb"]
    if person["bald"]:
        if layer == "back":  # a fringe around the sides only
            for side in (-1, 1):
                pen.ellipse(side * (rx - 3), 6, 8, 16, colour)
        return
    wave = 3.0 if person["wavy"] else 0.0
    if layer == "back":
        angles = np.linspace(math.pi, 2 * math.pi, 30)  # the top half of an oval around the head
        r = 1 + wave / 60 * np.sin(angles * 9)
        top = np.stack([(rx + 7) * r * np.cos(angles), FACE_CY + (ry + 9) * r * np.sin(angles)], 1)
        if person["long_hair"]:  # curtains of hair down to the shoulders
            length = ry + 40
            down_r = _bezier((rx + 7, FACE_CY), (rx + 14 + wave, FACE_CY + length / 2), (rx + 4, FACE_CY + length))
            down_l = down_r * (-1, 1)
            pen.polygon(np.concatenate([down_l[::-1], top, down_r, [(rx - 14, FACE_CY + length)],
                                        [(-rx + 14, FACE_CY + length)]]), colour)
        else:
            pen.polygon(np.concatenate([top, [(rx + 4, 14), (-rx - 4, 14)]]), colour)
        return
    # 'front': the hair above the hairline, over the top of the face
    bangs = person["bangs"] and not photo["hat"]  # a hat hides them (and the label says so)
    hairline = -16 if bangs else -42 if person["receding"] else -32
    angles = np.linspace(math.pi * 1.06, math.pi * 1.94, 24)
    top = np.stack([(rx + 1) * np.cos(angles), FACE_CY + (ry + 1) * np.sin(angles)], 1)
    if bangs:  # a fringe with a ragged edge
        xs = np.linspace(rx * 0.9, -rx * 0.9, 9)
        edge = np.stack([xs, hairline + np.where(np.arange(9) % 2 == 0, 0, -5)], 1)
    else:
        dip = 6 if person["receding"] else 2  # a receding hairline is M-shaped
        edge = _bezier((rx * 0.92, -6), (0, hairline + dip), (-rx * 0.92, -6), n=10)
        if person["receding"]:
            edge[3:7, 1] -= 7
    pen.polygon(np.concatenate([top, edge]), colour)
    if person["sideburns"]:
        for side in (-1, 1):
            pen.polygon([(side * (rx - 1), -6), (side * (rx - 8), -6), (side * (rx - 8), 18), (side * (rx - 2), 20)],
                        colour)


def _draw_mouth(pen, person, photo, skin):
    """The mouth, the one thing the classifier must learn to read."""
    kind = photo["mouth"]
    lips = photo["lip_rgb"] if photo["lipstick"] else _mix(skin, (170, 70, 70), 0.5)
    dark = (22, 6, 10)
    teeth = (246, 244, 232)
    thick = 1.5 if person["big_lips"] else 1.0
    left, right, upper, lower = _mouth_points(photo)
    if kind == "grin":
        # an open mouth: lip-coloured rim, dark inside, a bright band of upper teeth
        hole = np.concatenate([upper, lower[::-1]])
        pen.polygon(hole, lips, outline=lips, width=4 * thick)
        pen.polygon(hole, dark)
        top, bottom = upper[len(upper) // 2][1], lower[len(lower) // 2][1]
        gap = top + (bottom - top) * photo["teeth"]  # where the upper teeth end
        pen.polygon(np.concatenate([upper, _bezier(left, (0, gap), right)[::-1]]), teeth)
        pen.line(hole.tolist() + [hole[0].tolist()], _shade(lips, 0.55), 1.5)
    elif kind == "faint":  # closed lips, corners a little up
        bend = upper[len(upper) // 2][1]
        top = _bezier(left, (0, bend - 3.5 * thick), right)
        bottom = _bezier(left, (0, bend + 4.5 * thick), right)
        pen.polygon(np.concatenate([top, bottom[::-1]]), lips)
        pen.line(upper, _shade(lips, 0.45), 2.0)
    elif kind == "oh":
        ring = np.concatenate([upper, lower[::-1]])
        pen.polygon(ring, dark, outline=lips, width=4 * thick)
    else:  # neutral or slightly open
        y = MOUTH_Y - 1
        top = np.array([left, (-photo["mouth_w"] / 4, y - 3.5 * thick), (0, y - 2.2 * thick),
                        (photo["mouth_w"] / 4, y - 3.5 * thick), right])
        bottom = _bezier(left, (0, y + photo["opening"] + 4 * thick), right)
        pen.polygon(np.concatenate([top, bottom[::-1]]), lips)
        if photo["opening"] > 0:
            pen.polygon(np.concatenate([upper, lower[::-1]]), dark)
        else:
            pen.line(upper, _shade(lips, 0.45), 1.5)


def _draw_face(image, face, rng):
    """Everything but the background, back to front: body, hair, face, features, mouth, glasses, hat."""
    person, photo = face["person"], face["photo"]
    pen = _Pen(image, face)
    rx, ry = _face_shape(person)
    skin = person["skin"]
    chin = FACE_CY + ry
    es = person["eye_sep"]

    # body: shoulders, neck, tie, necklace
    pen.ellipse(0, chin + 95, rx * 2.0, 62, photo["clothes"])
    pen.polygon([(-17, chin - 20), (17, chin - 20), (20, chin + 40), (-20, chin + 40)], _shade(skin, 0.82))
    if photo["necktie"]:
        pen.polygon([(0, chin + 36), (-7, chin + 48), (0, chin + 90), (7, chin + 48)], photo["tie_rgb"])
        pen.polygon([(-5, chin + 32), (5, chin + 32), (3, chin + 39), (-3, chin + 39)], _shade(photo["tie_rgb"], 0.7))
    if photo["necklace"]:
        pen.line(_bezier((-17, chin + 4), (0, chin + 20), (17, chin + 4)), (225, 190, 80), 2.0)

    _draw_hair(pen, person, photo, rx, ry, "back")
    for side in (-1, 1):  # ears, earrings
        pen.ellipse(side * (rx - 1), 8, 6.5, 11, _shade(skin, 0.9))
        if photo["earrings"]:
            pen.ellipse(side * (rx - 1), 22, 2.6, 2.6, (230, 200, 90), outline=(120, 100, 40))

    # the face itself: an oval, squarer at the jaw for men
    outline = _ellipse(0, FACE_CY, rx, ry)
    if person["male"]:
        lower = outline[:, 1] > FACE_CY
        outline[lower, 0] *= 1 + 0.10 * np.abs(np.sin(np.arctan2(outline[lower, 1] - FACE_CY, outline[lower, 0])))
    pen.polygon(outline, skin)
    if person["double_chin"]:
        pen.line(_bezier((-18, chin - 2), (0, chin + 6), (18, chin - 2)), _shade(skin, 0.75), 2)

    # beards (below the mouth's features so that the mouth stays visible)
    beard = person["beard"]
    if beard in ("stubble", "full"):
        angles = np.linspace(-0.1, math.pi + 0.1, 24)  # the jaw, right to left
        jaw = np.stack([rx * 1.03 * np.cos(angles), FACE_CY + ry * np.sin(angles)], 1)
        inner = _bezier((-rx * 0.8, 14), (0, MOUTH_Y + 20), (rx * 0.8, 14))
        alpha = 70 if beard == "stubble" else 235
        pen.polygon(np.concatenate([jaw, inner]), (*_shade(person["hair_rgb"], 0.8), alpha))
    if beard == "goatee":
        pen.polygon([(-11, MOUTH_Y + 16), (11, MOUTH_Y + 16), (7, chin - 1), (-7, chin - 1)], person["hair_rgb"])

    # cheeks
    if photo["rosy"]:
        for side in (-1, 1):
            pen.ellipse(side * 28, 27, 10, 7, (230, 90, 100, 80))
    if photo["high_cheeks"]:
        for side in (-1, 1):
            pen.ellipse(side * 27, 20, 11, 6, (255, 255, 255, 45))
            pen.line(_bezier((side * 36, 28), (side * 30, 33), (side * 22, 34), n=6), _shade(skin, 0.82), 1.5)
    if not person["young"]:
        for y in (-22, -26):
            pen.line(_bezier((-16, y), (0, y - 2), (16, y)), _shade(skin, 0.8), 1)

    # eyes, with makeup, bags; a grin narrows them
    eye_ry = 2.3 if photo["narrow_eyes"] else 3.9
    for side in (-1, 1):
        x = side * es
        if photo["makeup"]:
            pen.ellipse(x, EYE_Y - 3.5, 9, 4.5, (*photo["shadow_rgb"], 120))
        if photo["bags"]:
            pen.line(_bezier((x - 6, 4.5), (x, 7), (x + 6, 4.5), n=6), _shade(skin, 0.72), 1.5)
        pen.ellipse(x, EYE_Y, 7.5, eye_ry, (245, 245, 240))
        pen.ellipse(x, EYE_Y, min(3.3, eye_ry + 0.4), min(3.3, eye_ry), person["iris"])
        pen.ellipse(x, EYE_Y, 1.4, 1.4, (15, 10, 10))
        lid = _ellipse(x, EYE_Y, 7.5, eye_ry)[20:][::-1]
        pen.line(lid, (30, 20, 20), 2.2 if photo["makeup"] else 1.2)
        if photo["squint"]:  # a smile pushes the lower lids up
            pen.line(_bezier((x - 7, 1.5), (x, 3.5), (x + 7, 1.5), n=6), _shade(skin, 0.7), 1.5)
        # eyebrow
        brow_lift = -3.5 if person["arched_brows"] else -1.0
        brow_colour = _shade(person["hair_rgb"], 0.55 if person["hair"] in ("blond", "gray") else 0.8)
        pen.line(_bezier((x - side * 9, BROW_Y + 1), (x, BROW_Y + brow_lift), (x + side * 9, BROW_Y + 1.5), n=8),
                 brow_colour, 4.5 if person["bushy_brows"] else 2.6)

    # nose
    nw = 8.0 if person["big_nose"] else 6.0
    tip = NOSE_Y + (2.0 if person["pointy_nose"] else 0.0)
    pen.line([(-2.5, 4), (-3.5, tip - 6)], _shade(skin, 0.85), 1.2)
    pen.line(_bezier((-nw, NOSE_Y - 2), (0, tip + 3), (nw, NOSE_Y - 2), n=8), _shade(skin, 0.72), 1.8)
    for side in (-1, 1):
        pen.ellipse(side * nw * 0.45, NOSE_Y + 0.5, 1.8, 1.1, _shade(skin, 0.45))

    # smile folds: from the nose's wings past the mouth's corners
    if photo["mouth"] == "grin":
        left, right, _, _ = _mouth_points(photo)
        for side, corner in ((-1, left), (1, right)):
            pen.line(_bezier((side * (nw + 4), NOSE_Y - 2), (corner[0] + side * 7, corner[1] - 6),
                             corner + (side * 4, 5), n=8), _shade(skin, 0.68), 2.0)

    if beard == "mustache" or beard == "full":
        left, right, upper, _ = _mouth_points(photo)
        y = min(left[1], upper[:, 1].min()) - 5
        pen.line(_bezier((left[0] - 2, y + 3), (0, y - 1.5), (right[0] + 2, y + 3)), person["hair_rgb"], 5)

    _draw_mouth(pen, person, photo, skin)

    # glasses
    if photo["glasses"]:
        frame = photo["frame"]
        for side in (-1, 1):
            lens = _ellipse(side * es, EYE_Y + 0.5, 10.5, 8)
            fill = (20, 20, 25, 235) if photo["sunglasses"] else (255, 255, 255, 25)
            pen.polygon(lens, fill, outline=frame, width=1.8)
            pen.line([(side * (es + 10.5), EYE_Y - 1), (side * (rx - 1), EYE_Y - 2)], frame, 1.6)
        pen.line([(-es + 10.5, -1), (0, -2.5), (es - 10.5, -1)], frame, 1.6)

    # front hair, hat
    _draw_hair(pen, person, photo, rx, ry, "front")
    if photo["hat"]:
        colour = photo["hat_rgb"]
        if photo["hat_style"] == 0:  # a brimmed hat
            pen.polygon([(-rx * 0.9, -30), (-rx * 0.75, -78), (rx * 0.75, -78), (rx * 0.9, -30)], colour)
            pen.ellipse(0, -30, rx * 1.45, 9, _shade(colour, 0.8))
        else:  # a beanie
            pen.polygon(np.concatenate([_ellipse(0, -30, rx + 5, 40)[20:], [(rx + 5, -24), (-rx - 5, -24)]]), colour)
            pen.polygon([(-rx - 6, -34), (rx + 6, -34), (rx + 6, -22), (-rx - 6, -22)], _shade(colour, 0.8))

    # something in front of the mouth, now and then: it hides the mouth completely
    if photo["occluder"]:
        _, _, upper, lower = _mouth_points(photo)
        edge = np.concatenate([upper, lower])
        half = np.abs(edge[:, 0]).max() + 7
        top, bottom = edge[:, 1].min() - 8, edge[:, 1].max() + 8
        if photo["occluder"] == "hand":
            hand = _shade(skin, rng.uniform(0.9, 1.05))
            pen.polygon([(-half, top + 2), (half - 3, top), (half, bottom + 8), (-half + 4, bottom + 10)], hand)
            for x in np.linspace(-half / 2, half / 2, 3):  # the gaps between the fingers
                pen.line([(x, top), (x + 2, (top + bottom) / 2)], _shade(hand, 0.75), 1.2)
        else:  # a cup or a sign, in a random colour
            colour = rng.uniform(20, 230, 3)
            narrow = 4 if rng.random() < 0.5 else 0
            pen.polygon([(-half, top), (half, top), (half - narrow, bottom + 30), (-half + narrow, bottom + 30)],
                        colour)
            pen.line([(-half, top + 3), (half, top + 3)], _shade(colour, 0.7), 2)


_NOISE = None  # made on first use, in each worker process


def _noise(rng):
    """A 218x178x3 patch of Gaussian noise: a random window into one fixed, larger noise image
    (much faster than fresh random numbers for every pixel, and just as deterministic)."""
    global _NOISE
    if _NOISE is None:
        _NOISE = np.random.default_rng(2024).standard_normal((3, 2 * HEIGHT, 2 * WIDTH), np.float32)
    y, x = rng.integers(0, HEIGHT), rng.integers(0, WIDTH)
    return _NOISE[:, y:y + HEIGHT, x:x + WIDTH]


def _render(face) -> Image.Image:
    """One image, drawn from its plan (deterministic: its own random numbers)."""
    photo = face["photo"]
    rng = np.random.default_rng([face["seed"], _PIXELS, face["index"]])
    image = _background(photo, rng)
    _draw_face(image, face, rng)
    # the camera: uneven light, exposure, sensor noise, focus
    light = (1 + photo["light"] * _ramp(photo["light_dir"]) / 110) * photo["exposure"]
    planes = np.asarray(image).transpose(2, 0, 1) * light + _noise(rng) * photo["noise"]  # (3, H, W)
    planes = np.clip(planes, 0, 255).astype(np.uint8)
    image = Image.fromarray(np.ascontiguousarray(planes.transpose(1, 2, 0)), "RGB")
    if photo["blurry"]:
        return image.filter(ImageFilter.GaussianBlur(rng.uniform(1.4, 2.2)))
    if photo["blur"] > 0:  # a slightly soft focus, on about half the photos
        return image.filter(ImageFilter.BoxBlur(photo["blur"]))
    return image


def render(face) -> Image.Image:
    """The image for one item of `plan(...)` (a 178x218 RGB PIL image)."""
    return _render(face)


# --- the text files -------------------------------------------------------------


def _write_text(path: Path, lines) -> None:
    """Write a text file atomically (temp + rename): a reader never sees half a file."""
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "w", newline="\n") as f:
        f.writelines(lines)
    os.replace(tmp, path)


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
        face = _plan_face(seed, index, identity, split, people)
        if draw:
            final = os.path.join(folder, face["filename"])
            tmp = f"{final}.{os.getpid()}.part"
            _render(face).save(tmp, format="JPEG", quality=face["photo"]["quality"])
            os.replace(tmp, final)
        rows.append((face["filename"], split, identity, face["attrs"], bbox(face), landmarks(face)))
    return rows


def _draw_images(folder: Path, seed: int, jobs, workers: int, progress: bool) -> list[tuple]:
    """Draw the images in chunks, on `workers` processes; return all rows, in file order."""
    from tqdm import tqdm

    size = max(8, min(200, math.ceil(len(jobs) / (workers * 8))))
    chunks = [(str(folder), seed, jobs[i:i + size]) for i in range(0, len(jobs), size)]
    rows = []
    with tqdm(total=sum(draw for *_, draw in jobs), unit="img", desc="drawing faces", file=sys.stderr,
              disable=not progress, dynamic_ncols=True) as bar:
        if workers == 1 or len(chunks) == 1:
            results = map(_draw_chunk, chunks)
            for chunk, done in zip(chunks, results):
                rows += done
                bar.update(sum(draw for *_, draw in chunk[2]))
        else:
            with ProcessPoolExecutor(max_workers=min(workers, len(chunks))) as pool:
                for chunk, done in zip(chunks, pool.map(_draw_chunk, chunks)):
                    rows += done
                    bar.update(sum(draw for *_, draw in chunk[2]))
    return rows


# --- generate: the public entry point ------------------------------------------------


def _check_counts(n_train, n_valid, n_test) -> dict:
    counts = {}
    for name, value in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be a whole number of images, got {value!r}")
        if value < 0:
            raise ValueError(f"{name} must not be negative (it is the number of images), got {value}")
        counts[name[2:]] = int(value)
    total = sum(counts.values())
    if total == 0:
        raise ValueError("n_train, n_valid and n_test are all 0: there would be no images to draw")
    if total > 999_999:
        raise ValueError(f"{total} images asked for; CelebA's file names (000001.jpg) allow at most 999,999")
    return counts


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    return int(seed)


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
    """Remove what a previous run of the generator wrote (and nothing else)."""
    for name in (*TEXT_FILES, MARKER_NAME):
        for path in (folder / name, folder / (name + ".part")):
            if path.is_file():
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
    counts = _check_counts(n_train, n_valid, n_test)
    seed = _check_seed(seed)
    if workers is None:
        workers = os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1 (or None: one per CPU), got {workers!r}")
    root = Path(root).expanduser()
    if root.exists() and not root.is_dir():
        raise ValueError(f"root {str(root)!r} is a file; give the folder that should hold celeba/")
    folder = root / "celeba"
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{str(folder)!r} is a file; generate() writes the folder celeba/ there")

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
            raise FileExistsError(
                f"{folder} already holds a data set that kata did not draw (no {MARKER_NAME} in it; found: "
                f"{', '.join(foreign)}). It may be the real CelebA, so it is left untouched. Use it as it is, "
                f"or pick another root for the synthetic set (e.g. `kata data --root data-synthetic`).")
    resume = _same_set(marker, params) or _same_set(partial, params)
    if not resume:
        _remove_owned_files(folder)

    started = time.time()
    (folder / IMAGE_FOLDER).mkdir(parents=True, exist_ok=True)
    (folder / MARKER_NAME).unlink(missing_ok=True)
    _write_text(folder / PARTIAL_NAME, [json.dumps(params, indent=2) + "\n"])  # "being written"
    present = set(os.listdir(folder / IMAGE_FOLDER)) if resume else set()
    jobs = [(index, identity, split, f"{index + 1:06d}.jpg" not in present)
            for index, identity, split in _jobs(counts, seed)]
    rows = _draw_images(folder / IMAGE_FOLDER, seed, jobs, int(workers), progress)
    _write_annotations(folder, rows)

    # Last: the marker that says "complete". Until it exists, the set counts as unfinished.
    marker = dict(params, name="kata synthetic CelebA", image_size=[WIDTH, HEIGHT], total=total,
                  smiling=sum(row[3][SMILING] == 1 for row in rows),
                  created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), seconds=round(time.time() - started, 1))
    _write_text(folder / MARKER_NAME, [json.dumps(marker, indent=2) + "\n"])
    (folder / PARTIAL_NAME).unlink(missing_ok=True)
    return folder
