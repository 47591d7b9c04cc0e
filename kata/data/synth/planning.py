"""Planning: who is in each photo, what the photo shows, and its 40 labels (nothing is drawn here).

Every image gets a random "person" (skin, hair, face shape, ...: a few photos
share one, as in CelebA) and a random "photo" (pose, expression, glasses, hat,
background, ...): read `_sample_person` and `_sample_photo`. Each image's
random numbers come from its own generator, seeded by (seed, stream, number),
so the result is the same whatever the number of worker processes.

The 40 attributes are read off the plan: Eyeglasses is +1 exactly when
glasses are drawn, and so on. Smiling is +1 for about 48% of faces; a few
labels are deliberately wrong (LABEL_NOISE) and a few mouths hidden
(OCCLUDED), as in any real data set.

Anything that changes the plan changes the drawn set: bump VERSION
(kata.data.synth.writing), which keys the caches.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from kata.data.layout import ATTRIBUTE_NAMES, SPLITS, WIDTH
from kata.i18n import _, say

__all__ = [
    "plan", "plan_face", "image_jobs", "check_counts", "check_seed",
    "LABEL_NOISE", "OCCLUDED", "STREAM_PEOPLE", "STREAM_PHOTOS", "STREAM_PIXELS", "STREAM_IDENTITIES",
    "SKIN_TONES", "HAIR_COLOURS", "LIPSTICKS", "IRISES", "SMILES", "NON_SMILES",
]

# How often the label disagrees with the picture, and how often the mouth is hidden.
LABEL_NOISE = 0.02
OCCLUDED = 0.02

# Random-number "streams": one generator per (seed, stream, number). STREAM_PIXELS is the
# drawing's (kata.data.synth.drawing); the others are the plan's.
STREAM_PEOPLE, STREAM_PHOTOS, STREAM_PIXELS, STREAM_IDENTITIES = 1, 2, 3, 4


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
    names, weights = zip(*table, strict=True)
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
    rng = np.random.default_rng([seed, STREAM_IDENTITIES])
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


def image_jobs(counts: dict, seed: int) -> list[tuple[int, int, int]]:
    """(index, identity, split) of every image, in file order."""
    identities = _identities(counts, seed)
    splits = [code for code, split in enumerate(SPLITS) for _ in range(counts[split])]
    return list(zip(range(len(identities)), identities, splits, strict=True))


def plan_face(seed: int, index: int, identity: int, split: int, people: dict) -> dict:
    """The plan of one image: its person (shared through `people`, a cache) and its photo."""
    if identity not in people:
        people[identity] = _sample_person(np.random.default_rng([seed, STREAM_PEOPLE, identity]))
    photo = _sample_photo(np.random.default_rng([seed, STREAM_PHOTOS, index]), people[identity])
    return dict(index=index, filename=f"{index + 1:06d}.jpg", split=split, identity=identity,
                attrs=photo.pop("attrs"), person=people[identity], photo=photo, seed=seed)


def plan(n_train: int, n_valid: int = 0, n_test: int = 0, seed: int = 0) -> list[dict]:
    """The plan of every image, without drawing anything (cheap: use it to study the labels).

    Item i describes image i + 1 ("000001.jpg" is item 0): its file name, split
    (0 train, 1 valid, 2 test), identity, the 40 attributes (``attrs``, +1/-1 in
    ATTRIBUTE_NAMES order), and the person's and photo's drawing parameters.
    `generate` draws exactly these faces.
    """
    counts = check_counts(n_train, n_valid, n_test)
    seed = check_seed(seed)
    people: dict[int, dict] = {}
    return [plan_face(seed, *job, people) for job in image_jobs(counts, seed)]


# --- the arguments of plan() and generate() -------------------------------------------


def check_counts(n_train, n_valid, n_test) -> dict:
    """{"train": n_train, "valid": n_valid, "test": n_test}, checked: ValueError if a count is bad."""
    counts = {}
    for name, value in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(say("{name} must be a whole number of images, got {value!r}", name=name, value=value))
        if value < 0:
            raise ValueError(say("{name} must not be negative (it is the number of images), got {value}", name=name,
                                 value=value))
        counts[name[2:]] = int(value)
    total = sum(counts.values())
    if total == 0:
        raise ValueError(_("n_train, n_valid and n_test are all 0: there would be no images to draw"))
    if total > 999_999:
        raise ValueError(say("{total} images asked for; CelebA's file names (000001.jpg) allow at most 999,999",
                             total=total))
    return counts


def check_seed(seed) -> int:
    """The seed as an int, checked: ValueError unless it is a whole number >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(say("seed must be a whole number >= 0, got {seed!r}", seed=seed))
    return int(seed)
