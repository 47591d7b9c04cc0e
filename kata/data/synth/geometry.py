"""Geometry: face coordinates, and where the face's parts land in the image.

Shapes are placed in "face coordinates" (origin between the eyes, y pointing
down, about one unit per pixel) and mapped to the image by one rotation +
scale + shift (`placement`), so the landmarks written to
list_landmarks_align_celeba.txt are exactly the drawn positions.

`landmarks`, `bbox` and `mouth_outline` read a face's plan (an item of
`plan(...)`) and say where things are drawn, without drawing anything;
kata.data.synth.drawing draws with the same helpers.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "landmarks", "bbox", "mouth_outline", "mouth_points", "face_shape", "placement", "bezier", "ellipse",
    "EYE_Y", "BROW_Y", "NOSE_Y", "MOUTH_Y", "FACE_CY", "FACE_RX", "FACE_RY",
]

# Face coordinates (units ~ pixels at scale 1; y points down):
EYE_Y = 0.0  # eyes on the x axis, at +-eye_sep
BROW_Y = -12.0
NOSE_Y = 24.0  # nose tip
MOUTH_Y = 38.0  # centre of a closed mouth
FACE_CY, FACE_RX, FACE_RY = 18.0, 50.0, 64.0  # the face oval

_CIRCLE = np.stack([np.cos(np.linspace(0, 2 * np.pi, 40, endpoint=False)),
                    np.sin(np.linspace(0, 2 * np.pi, 40, endpoint=False))], axis=1)


def bezier(p0, mid, p2, n=12):
    """Points of the smooth curve from p0 to p2 that passes through mid halfway."""
    p0, mid, p2 = (np.asarray(p, float) for p in (p0, mid, p2))
    control = 2 * mid - (p0 + p2) / 2
    t = np.linspace(0, 1, n)[:, None]
    return (1 - t) ** 2 * p0 + 2 * t * (1 - t) * control + t ** 2 * p2


def ellipse(cx, cy, rx, ry):
    """40 points around the ellipse with centre (cx, cy) and radii rx, ry (clockwise on screen, from +x)."""
    return _CIRCLE * (rx, ry) + (cx, cy)


def face_shape(person):
    """The face oval's radii (rx, ry) in face coordinates: its centre is (0, FACE_CY)."""
    return FACE_RX * person["face_w"] * (0.94 if person["oval"] else 1.0), FACE_RY * person["face_h"] * (
        1.06 if person["oval"] else 1.0)


def mouth_points(photo):
    """The mouth's outline in face coordinates: (left corner, right corner, upper edge, lower edge)."""
    w, u, kind = photo["mouth_w"], photo["upturn"], photo["mouth"]
    left, right = np.array([-w / 2, MOUTH_Y - u]), np.array([w / 2, MOUTH_Y - u])
    if kind == "grin":  # a wide "D": upper edge nearly flat, lower edge half an ellipse
        upper = bezier(left, (0, MOUTH_Y - u + 2.5), right)
        t = np.linspace(math.pi, 0, 16)
        lower = np.stack([w / 2 * np.cos(t), MOUTH_Y - u + photo["opening"] * np.sin(t)], 1)
    elif kind == "faint":  # closed lips along a shallow U
        upper = lower = bezier(left, (0, MOUTH_Y + 3), right)
    elif kind == "oh":
        oval = ellipse(0, MOUTH_Y + 3, w / 2, photo["opening"])
        return oval[20], oval[0], oval[20:][::-1], oval[:21]
    else:  # neutral / open: a nearly straight line, corners level or slightly down
        upper = bezier(left, (0, MOUTH_Y - 1), right)
        lower = bezier(left, (0, MOUTH_Y - 1 + photo["opening"]), right)
    return left, right, upper, lower


def placement(face):
    """The map from face coordinates to image pixels: (2x2 matrix, shift). Rotation by the tilt, then scale."""
    p = face["photo"]
    a = math.radians(p["tilt"])
    matrix = p["scale"] * np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return matrix, np.array([p["cx"], p["cy"]])


def _to_image(face, points):
    matrix, shift = placement(face)
    return np.asarray(points, float) @ matrix.T + shift


def landmarks(face) -> list[int]:
    """The 10 numbers of list_landmarks_align_celeba.txt: where the eyes, nose tip and mouth corners are drawn.

    As in CelebA, "left" means the image's left (smaller x).
    """
    es = face["person"]["eye_sep"]
    left, right, _, _ = mouth_points(face["photo"])
    points = _to_image(face, [(-es, EYE_Y), (es, EYE_Y), (0, NOSE_Y), left, right])
    return [int(round(v)) for v in points.ravel()]


def mouth_outline(face) -> np.ndarray:
    """Where the mouth is drawn: its outline in image pixels, an (n, 2) array of (x, y).

    (Lips add up to 3 pixels around it.) The tests use it to check that every
    mouth stays inside rows 40..177, which every 178-row crop of the book keeps.
    """
    _, _, upper, lower = mouth_points(face["photo"])
    return _to_image(face, np.concatenate([upper, lower]))


def bbox(face) -> list[int]:
    """x_1 y_1 width height of the face oval in the image. (CelebA's boxes refer to its uncropped
    photos; ours refer to the image itself.)"""
    rx, ry = face_shape(face["person"])
    points = _to_image(face, ellipse(0, FACE_CY, rx, ry))
    x0, y0 = np.floor(points.min(axis=0)).astype(int)
    x1, y1 = np.ceil(points.max(axis=0)).astype(int)
    return [int(x0), int(y0), int(x1 - x0), int(y1 - y0)]

