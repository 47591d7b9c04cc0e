"""Drawing: one 178x218 cartoon face from its plan, as CelebA's aligned photos look.

`render(face)` draws an item of `plan(...)` back to front: a background
(a two-colour gradient with soft blobs), the body, hair, the face oval, beard,
cheeks, eyes, nose, mouth, glasses, hat, and now and then a hand or an object
over the mouth; then a camera: uneven light, exposure, sensor noise, focus.
Shapes are given in face coordinates (kata.data.synth.geometry) and drawn by
`_Pen`, which maps them into the image. Each image's random numbers come from
its own generator (seed, STREAM_PIXELS, image number), so a face is drawn the
same in any process.

What makes the task learnable: a smile is a wide open laugh, a big dark mouth
under a band of upper teeth, with upturned corners, smile folds and (often)
squinting eyes; a non-smile is a narrow closed mouth, or a small toothless
opening (read `_draw_mouth`). The smile is drawn big on purpose: the book's
CNN, trained on 2,000 images, stays at chance for many epochs unless the smile
changes a good 5% of the 178x178 crop (a thin smiling arc, or a 34x20 band of
teeth, is not enough). What keeps it honest: faint smiles, hands or objects
over the mouth, and a few wrong labels (planned in kata.data.synth.planning).

Anything that changes the pixels changes the drawn set: bump VERSION
(kata.data.synth.writing), which keys the caches.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from kata.data.layout import HEIGHT, WIDTH
from kata.data.synth.geometry import (
    BROW_Y,
    EYE_Y,
    FACE_CY,
    MOUTH_Y,
    NOSE_Y,
    bezier,
    ellipse,
    face_shape,
    mouth_points,
    placement,
)
from kata.data.synth.planning import STREAM_PIXELS

__all__ = ["render"]


# --- the pen: face coordinates -> pixels, and colours ---------------------------

_YS = np.arange(HEIGHT, dtype=np.float32)[:, None]  # each pixel's row ...
_XS = np.arange(WIDTH, dtype=np.float32)[None, :]  # ... and column


class _Pen:
    """Draws shapes given in face coordinates onto the image."""

    def __init__(self, image, face):
        self.draw = ImageDraw.Draw(image, "RGBA")  # RGBA: fills with an alpha are blended
        self.matrix, self.shift = placement(face)
        self.scale = face["photo"]["scale"]

    def _xy(self, points):
        return (np.asarray(points, float) @ self.matrix.T + self.shift).ravel().tolist()

    def _width(self, width):
        return max(1, round(width * self.scale))

    def polygon(self, points, fill, outline=None, width=1.0):
        self.draw.polygon(self._xy(points), fill=_ink(fill), outline=_ink(outline), width=self._width(width))

    def ellipse(self, cx, cy, rx, ry, fill, outline=None, width=1.0):
        self.polygon(ellipse(cx, cy, rx, ry), fill, outline, width)

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
            down_r = bezier((rx + 7, FACE_CY), (rx + 14 + wave, FACE_CY + length / 2), (rx + 4, FACE_CY + length))
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
        edge = bezier((rx * 0.92, -6), (0, hairline + dip), (-rx * 0.92, -6), n=10)
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
    left, right, upper, lower = mouth_points(photo)
    if kind == "grin":
        # an open mouth: lip-coloured rim, dark inside, a bright band of upper teeth
        hole = np.concatenate([upper, lower[::-1]])
        pen.polygon(hole, lips, outline=lips, width=4 * thick)
        pen.polygon(hole, dark)
        top, bottom = upper[len(upper) // 2][1], lower[len(lower) // 2][1]
        gap = top + (bottom - top) * photo["teeth"]  # where the upper teeth end
        pen.polygon(np.concatenate([upper, bezier(left, (0, gap), right)[::-1]]), teeth)
        pen.line(hole.tolist() + [hole[0].tolist()], _shade(lips, 0.55), 1.5)
    elif kind == "faint":  # closed lips, corners a little up
        bend = upper[len(upper) // 2][1]
        top = bezier(left, (0, bend - 3.5 * thick), right)
        bottom = bezier(left, (0, bend + 4.5 * thick), right)
        pen.polygon(np.concatenate([top, bottom[::-1]]), lips)
        pen.line(upper, _shade(lips, 0.45), 2.0)
    elif kind == "oh":
        ring = np.concatenate([upper, lower[::-1]])
        pen.polygon(ring, dark, outline=lips, width=4 * thick)
    else:  # neutral or slightly open
        y = MOUTH_Y - 1
        top = np.array([left, (-photo["mouth_w"] / 4, y - 3.5 * thick), (0, y - 2.2 * thick),
                        (photo["mouth_w"] / 4, y - 3.5 * thick), right])
        bottom = bezier(left, (0, y + photo["opening"] + 4 * thick), right)
        pen.polygon(np.concatenate([top, bottom[::-1]]), lips)
        if photo["opening"] > 0:
            pen.polygon(np.concatenate([upper, lower[::-1]]), dark)
        else:
            pen.line(upper, _shade(lips, 0.45), 1.5)


def _draw_face(image, face, rng):
    """Everything but the background, back to front: body, hair, face, features, mouth, glasses, hat."""
    person, photo = face["person"], face["photo"]
    pen = _Pen(image, face)
    rx, ry = face_shape(person)
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
        pen.line(bezier((-17, chin + 4), (0, chin + 20), (17, chin + 4)), (225, 190, 80), 2.0)

    _draw_hair(pen, person, photo, rx, ry, "back")
    for side in (-1, 1):  # ears, earrings
        pen.ellipse(side * (rx - 1), 8, 6.5, 11, _shade(skin, 0.9))
        if photo["earrings"]:
            pen.ellipse(side * (rx - 1), 22, 2.6, 2.6, (230, 200, 90), outline=(120, 100, 40))

    # the face itself: an oval, squarer at the jaw for men
    outline = ellipse(0, FACE_CY, rx, ry)
    if person["male"]:
        lower = outline[:, 1] > FACE_CY
        outline[lower, 0] *= 1 + 0.10 * np.abs(np.sin(np.arctan2(outline[lower, 1] - FACE_CY, outline[lower, 0])))
    pen.polygon(outline, skin)
    if person["double_chin"]:
        pen.line(bezier((-18, chin - 2), (0, chin + 6), (18, chin - 2)), _shade(skin, 0.75), 2)

    # beards (below the mouth's features so that the mouth stays visible)
    beard = person["beard"]
    if beard in ("stubble", "full"):
        angles = np.linspace(-0.1, math.pi + 0.1, 24)  # the jaw, right to left
        jaw = np.stack([rx * 1.03 * np.cos(angles), FACE_CY + ry * np.sin(angles)], 1)
        inner = bezier((-rx * 0.8, 14), (0, MOUTH_Y + 20), (rx * 0.8, 14))
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
            pen.line(bezier((side * 36, 28), (side * 30, 33), (side * 22, 34), n=6), _shade(skin, 0.82), 1.5)
    if not person["young"]:
        for y in (-22, -26):
            pen.line(bezier((-16, y), (0, y - 2), (16, y)), _shade(skin, 0.8), 1)

    # eyes, with makeup, bags; a grin narrows them
    eye_ry = 2.3 if photo["narrow_eyes"] else 3.9
    for side in (-1, 1):
        x = side * es
        if photo["makeup"]:
            pen.ellipse(x, EYE_Y - 3.5, 9, 4.5, (*photo["shadow_rgb"], 120))
        if photo["bags"]:
            pen.line(bezier((x - 6, 4.5), (x, 7), (x + 6, 4.5), n=6), _shade(skin, 0.72), 1.5)
        pen.ellipse(x, EYE_Y, 7.5, eye_ry, (245, 245, 240))
        pen.ellipse(x, EYE_Y, min(3.3, eye_ry + 0.4), min(3.3, eye_ry), person["iris"])
        pen.ellipse(x, EYE_Y, 1.4, 1.4, (15, 10, 10))
        lid = ellipse(x, EYE_Y, 7.5, eye_ry)[20:][::-1]
        pen.line(lid, (30, 20, 20), 2.2 if photo["makeup"] else 1.2)
        if photo["squint"]:  # a smile pushes the lower lids up
            pen.line(bezier((x - 7, 1.5), (x, 3.5), (x + 7, 1.5), n=6), _shade(skin, 0.7), 1.5)
        # eyebrow
        brow_lift = -3.5 if person["arched_brows"] else -1.0
        brow_colour = _shade(person["hair_rgb"], 0.55 if person["hair"] in ("blond", "gray") else 0.8)
        pen.line(bezier((x - side * 9, BROW_Y + 1), (x, BROW_Y + brow_lift), (x + side * 9, BROW_Y + 1.5), n=8),
                 brow_colour, 4.5 if person["bushy_brows"] else 2.6)

    # nose
    nw = 8.0 if person["big_nose"] else 6.0
    tip = NOSE_Y + (2.0 if person["pointy_nose"] else 0.0)
    pen.line([(-2.5, 4), (-3.5, tip - 6)], _shade(skin, 0.85), 1.2)
    pen.line(bezier((-nw, NOSE_Y - 2), (0, tip + 3), (nw, NOSE_Y - 2), n=8), _shade(skin, 0.72), 1.8)
    for side in (-1, 1):
        pen.ellipse(side * nw * 0.45, NOSE_Y + 0.5, 1.8, 1.1, _shade(skin, 0.45))

    # smile folds: from the nose's wings past the mouth's corners
    if photo["mouth"] == "grin":
        left, right, _, _ = mouth_points(photo)
        for side, corner in ((-1, left), (1, right)):
            pen.line(bezier((side * (nw + 4), NOSE_Y - 2), (corner[0] + side * 7, corner[1] - 6),
                             corner + (side * 4, 5), n=8), _shade(skin, 0.68), 2.0)

    if beard == "mustache" or beard == "full":
        left, right, upper, _ = mouth_points(photo)
        y = min(left[1], upper[:, 1].min()) - 5
        pen.line(bezier((left[0] - 2, y + 3), (0, y - 1.5), (right[0] + 2, y + 3)), person["hair_rgb"], 5)

    _draw_mouth(pen, person, photo, skin)

    # glasses
    if photo["glasses"]:
        frame = photo["frame"]
        for side in (-1, 1):
            lens = ellipse(side * es, EYE_Y + 0.5, 10.5, 8)
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
            pen.polygon(np.concatenate([ellipse(0, -30, rx + 5, 40)[20:], [(rx + 5, -24), (-rx - 5, -24)]]), colour)
            pen.polygon([(-rx - 6, -34), (rx + 6, -34), (rx + 6, -22), (-rx - 6, -22)], _shade(colour, 0.8))

    # something in front of the mouth, now and then: it hides the mouth completely
    if photo["occluder"]:
        _, _, upper, lower = mouth_points(photo)
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


def render(face) -> Image.Image:
    """The image for one item of `plan(...)` (a 178x218 RGB PIL image).

    Deterministic: the face's own random numbers, whatever process draws it.
    """
    photo = face["photo"]
    rng = np.random.default_rng([face["seed"], STREAM_PIXELS, face["index"]])
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
