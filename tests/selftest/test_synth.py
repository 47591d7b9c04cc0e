"""Checks of kata.data.synth: the synthetic CelebA's files, labels, faces and caching (its learnability: the
default `kata train` run of tests/selftest/test_train.py, on the book's CNN).

A small set (40 train, 12 valid, 12 test images) is drawn once for the module;
the checks that change a data set work on their own copies or folders.
"""

import json
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from kata.data import synth
from kata.data.layout import ATTRIBUTE_NAMES, MARKER_NAME, PARTIAL_NAME, TEXT_FILES

SMALL = dict(n_train=40, n_valid=12, n_test=12)
SEED = 7
N = sum(SMALL.values())
NAMES = [f"{i:06d}.jpg" for i in range(1, N + 1)]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """ROOT/celeba of the small set (drawn in this process: workers=1)."""
    root = tmp_path_factory.mktemp("small")
    folder = synth.generate(root, **SMALL, seed=SEED, workers=1, progress=False)
    assert folder == root / "celeba", f"generate returned {folder}, not the folder it wrote, {root / 'celeba'}"
    return folder


@pytest.fixture(scope="module")
def faces():
    """The plan of the small set: what generate drew."""
    return synth.plan(**SMALL, seed=SEED)


def lines(folder, name):
    return (folder / name).read_text().splitlines()


def all_files(folder):
    """{relative path: bytes} of every file under folder."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- layout -------------------------------------------------------------------------


def test_every_file_of_celeba_is_written(small):
    for name in (*TEXT_FILES, MARKER_NAME):
        assert (small / name).is_file(), f"{name} is missing from {small}"
    images = small / "img_align_celeba"
    assert images.is_dir(), f"the image folder {images} is missing"
    found = sorted(p.name for p in images.iterdir())
    assert found == NAMES, (
        f"img_align_celeba/ holds {found[:3]}...{found[-2:]} ({len(found)} files); expected exactly "
        f"000001.jpg .. {N:06d}.jpg, numbered through train, valid and test, and nothing else")
    leftovers = [p.name for p in small.iterdir() if p.name not in (*TEXT_FILES, MARKER_NAME, "img_align_celeba")]
    assert not leftovers, f"temporary or unexpected files were left in {small}: {leftovers}"


def test_images_are_178_wide_218_high_rgb_jpegs(small):
    for name in NAMES:
        with Image.open(small / "img_align_celeba" / name) as image:
            assert image.format == "JPEG", f"{name} is a {image.format} file, not a JPEG"
            assert image.mode == "RGB", f"{name} has mode {image.mode}, not RGB"
            assert image.size == (178, 218), f"{name} is {image.size[0]}x{image.size[1]}, CelebA's are 178x218"


def test_partition_file_numbers_train_then_valid_then_test(small):
    rows = lines(small, "list_eval_partition.txt")
    expected = [f"{name} {0 if i < 40 else 1 if i < 52 else 2}" for i, name in enumerate(NAMES)]
    assert rows == expected, (
        "list_eval_partition.txt should read '000001.jpg 0' ...: 40 lines of split 0 (train), then 12 of 1 "
        f"(valid), then 12 of 2 (test); it starts {rows[:2]} and ends {rows[-2:]}")


def test_attribute_file_has_the_real_header_and_format(small):
    rows = lines(small, "list_attr_celeba.txt")
    assert rows[0] == str(N), f"the first line of list_attr_celeba.txt is {rows[0]!r}, should be the count, {N}"
    assert rows[1] == " ".join(ATTRIBUTE_NAMES) + " ", (
        "the second line should be the 40 attribute names, space-separated, ending in a space as in the real file")
    assert rows[1].split().index("Smiling") == 31, "Smiling must be attribute 31, as in CelebA"
    assert len(rows) == N + 2, f"list_attr_celeba.txt has {len(rows) - 2} image rows, expected {N}"
    pattern = re.compile(r"\d{6}\.jpg( (-1| 1)){40}")
    for name, row in zip(NAMES, rows[2:], strict=True):
        assert pattern.fullmatch(row) and row.startswith(name), (
            f"row {row!r} should be like '{name} -1  1 ...': the file name, then 40 values of -1 or 1, each "
            "right-aligned in 2 characters after one space")


def test_attribute_names_are_celebas_in_order():
    assert len(ATTRIBUTE_NAMES) == 40, f"there are {len(ATTRIBUTE_NAMES)} attribute names, CelebA has 40"
    assert ATTRIBUTE_NAMES[31] == "Smiling", f"attribute 31 is {ATTRIBUTE_NAMES[31]}, CelebA's is Smiling"
    assert ATTRIBUTE_NAMES[18] == "Heavy_Makeup", f"attribute 18 is {ATTRIBUTE_NAMES[18]}, should be Heavy_Makeup"
    assert (ATTRIBUTE_NAMES[0], ATTRIBUTE_NAMES[-1]) == ("5_o_Clock_Shadow", "Young"), (
        "the names run from 5_o_Clock_Shadow to Young, as in list_attr_celeba.txt")


def test_bbox_and_landmark_files_have_the_real_headers_and_spacing(small):
    bbox = lines(small, "list_bbox_celeba.txt")
    assert bbox[:2] == [str(N), "image_id x_1 y_1 width height"], (
        f"list_bbox_celeba.txt should start with the count and 'image_id x_1 y_1 width height', got {bbox[:2]}")
    for name, row in zip(NAMES, bbox[2:], strict=True):
        x, y, w, h = map(int, row.split()[1:])
        assert row == f"{name}{x:6d}{y:4d}{w:4d}{h:4d}", (
            f"bbox row {row!r} is not spaced as in the real file ('000001.jpg    95  71 226 313')")
        assert 0 <= x and 0 <= y and x + w <= 178 and y + h <= 218 and w > 40 and h > 40, (
            f"the face box of {name}, {(x, y, w, h)}, should be a face-sized box inside the 178x218 image")
    marks = lines(small, "list_landmarks_align_celeba.txt")
    header = ("lefteye_x lefteye_y righteye_x righteye_y nose_x nose_y "
              "leftmouth_x leftmouth_y rightmouth_x rightmouth_y")
    assert marks[:2] == [str(N), header], f"list_landmarks_align_celeba.txt should start with the count and {header!r}"
    for name, row in zip(NAMES, marks[2:], strict=True):
        values = list(map(int, row.split()[1:]))
        assert len(values) == 10 and row == name + " " + "".join(f"{v:5d}" for v in values), (
            f"landmark row {row!r} is not spaced as in the real file ('000001.jpg    69  109  106  113 ...')")


def test_identity_file_gives_a_few_photos_per_person_never_across_splits(small):
    rows = [row.split() for row in lines(small, "identity_CelebA.txt")]
    assert [r[0] for r in rows] == NAMES, "identity_CelebA.txt should list every image, in order, without a header"
    people = {}
    for i, (_, identity) in enumerate(rows):
        split = 0 if i < 40 else 1 if i < 52 else 2
        people.setdefault(int(identity), set()).add(split)
    assert all(identity > 0 for identity in people), "identities are positive numbers, as in CelebA"
    assert all(len(splits) == 1 for splits in people.values()), (
        "a person appears in more than one split; CelebA's splits have disjoint identities")
    counts = [sum(int(r[1]) == identity for r in rows) for identity in people]
    assert max(counts) >= 2 and len(people) < N, f"photos per person: {counts}; expected a few photos per person"


def test_same_person_same_looks_different_photo(faces):
    by_person = {}
    for face in faces:
        by_person.setdefault(face["identity"], []).append(face)
    shared = [group for group in by_person.values() if len(group) > 1]
    assert shared, "no identity has two photos"
    for group in shared:
        first = group[0]
        for other in group[1:]:
            assert np.array_equal(first["person"]["skin"], other["person"]["skin"]) and (
                first["person"]["hair"] == other["person"]["hair"]), (
                f"photos of person {first['identity']} have different skin or hair: one person, one look")
            assert (first["photo"]["cx"], first["photo"]["tilt"]) != (other["photo"]["cx"], other["photo"]["tilt"]), (
                f"two photos of person {first['identity']} have the same pose")


def test_marker_says_what_was_drawn(small):
    marker = json.loads((small / MARKER_NAME).read_text())
    for key, value in (("generator", "kata.synth"), ("version", synth.VERSION), ("seed", SEED),
                       ("counts", {"train": 40, "valid": 12, "test": 12})):
        assert marker.get(key) == value, f"the marker's {key!r} is {marker.get(key)!r}, expected {value!r}"
    assert "created" in marker, "the marker should record when the set was created"


# --- labels -----------------------------------------------------------------------------


def test_attribute_file_is_the_plan(small, faces):
    rows = [row.split() for row in lines(small, "list_attr_celeba.txt")[2:]]
    assert [tuple(map(int, r[1:])) for r in rows] == [f["attrs"] for f in faces], (
        "the attributes written differ from synth.plan() for the same arguments")


def test_drawn_attributes_match_the_labels():
    index = ATTRIBUTE_NAMES.index
    for face in synth.plan(400, seed=3):
        a, person, photo = face["attrs"], face["person"], face["photo"]
        checks = {
            "Eyeglasses": photo["glasses"], "Wearing_Hat": photo["hat"], "Male": person["male"],
            "Blond_Hair": person["hair"] == "blond", "Black_Hair": person["hair"] == "black",
            "Gray_Hair": person["hair"] == "gray", "Wearing_Lipstick": photo["lipstick"],
            "Goatee": person["beard"] == "goatee", "Mustache": person["beard"] == "mustache",
            "Mouth_Slightly_Open": photo["opening"] > 0, "Young": person["young"],
        }
        for name, drawn in checks.items():
            assert (a[index(name)] == 1) == bool(drawn), (
                f"{face['filename']}: {name} is labelled {a[index(name)]} but the face is drawn "
                f"{'with' if drawn else 'without'} it")
        assert (a[31] == 1) == (photo["smiling"] != photo["label_flip"]), (
            f"{face['filename']}: the Smiling label should be the drawn smile, except for the deliberate label noise")


def test_smiling_is_about_half_of_the_labels():
    smiling = [f["attrs"][31] == 1 for f in synth.plan(600, seed=11)]
    share = sum(smiling) / len(smiling)
    assert 0.40 <= share <= 0.56, f"{share:.0%} of 600 faces are labelled Smiling; CelebA has about 48%"


def test_some_labels_are_noisy_and_some_mouths_hidden():
    faces = synth.plan(3000, seed=5)
    flipped = sum(f["photo"]["label_flip"] for f in faces) / len(faces)
    hidden = sum(f["photo"]["occluder"] is not None for f in faces) / len(faces)
    faint = sum(f["photo"]["mouth"] == "faint" for f in faces) / len(faces)
    assert 0.01 <= flipped <= 0.04, f"{flipped:.1%} of labels are flipped; the set should have about 2% label noise"
    assert 0.01 <= hidden <= 0.04, f"{hidden:.1%} of mouths are hidden; about 2% should be covered by a hand or object"
    assert 0.01 <= faint <= 0.06, f"{faint:.1%} of mouths are faint smiles; a few should be honestly ambiguous"


# --- the drawn faces ----------------------------------------------------------------------


def test_mouths_stay_inside_every_178_row_crop():
    # RandomCrop([178, 178]) keeps rows top..top+177 for top in 0..40: rows 40..177 are always kept.
    for face in synth.plan(2000, seed=21):
        outline = synth.mouth_outline(face)
        top, bottom = outline[:, 1].min() - 3, outline[:, 1].max() + 3  # lips drawn up to 3 px around
        assert 40 <= top and bottom <= 177, (
            f"{face['filename']}: the mouth spans rows {top:.0f}..{bottom:.0f}; a random 178x178 crop can cut it "
            "off (it must stay within rows 40..177)")
        marks = synth.landmarks(face)
        xs, ys = marks[0::2], marks[1::2]
        assert all(0 <= x < 178 for x in xs) and all(0 <= y < 218 for y in ys), (
            f"{face['filename']}: landmarks {marks} fall outside the 178x218 image")
        assert all(40 <= y <= 177 for y in ys[3:]), f"{face['filename']}: mouth corners at rows {ys[3:]}"


def test_landmark_file_rows_are_inside_the_crop_and_in_face_order(small):
    for row in lines(small, "list_landmarks_align_celeba.txt")[2:]:
        name, *v = row.split()
        lx, ly, rx, ry, nx, ny, mlx, mly, mrx, mry = map(int, v)
        assert lx < nx < rx and mlx < mrx, (
            f"{name}: the left eye should be left of the nose, the nose left of the right eye, and the left "
            "mouth corner left of the right one")
        assert max(ly, ry) < ny < min(mly, mry), f"{name}: the nose should lie below the eyes and above the mouth"
        assert 40 <= min(mly, mry) and max(mly, mry) <= 177, f"{name}: mouth corners at rows {mly}, {mry}"


def test_landmarks_are_where_the_eyes_and_mouth_are_drawn():
    for face in synth.plan(60, seed=9):
        if face["photo"]["occluder"]:
            continue
        pixels = np.asarray(synth.render(face), float)
        marks = synth.landmarks(face)
        for k, what in ((0, "left eye"), (1, "right eye")):
            if face["photo"]["blurry"]:
                break  # a blurred pupil is not dark any more
            x, y = marks[2 * k], marks[2 * k + 1]
            assert pixels[y - 1:y + 2, x - 1:x + 2].mean() < 130, (
                f"{face['filename']}: no dark pupil at the {what} landmark ({x}, {y})")
        if face["photo"]["mouth"] == "grin":  # an open laugh: dark inside, below the teeth
            outline = synth.mouth_outline(face)
            x = int(round((marks[6] + marks[8]) / 2))
            y = int(round(outline[:, 1].max() - 0.35 * np.ptp(outline[:, 1])))
            assert pixels[y - 2:y + 3, x - 2:x + 3].mean() < 60, (
                f"{face['filename']}: the inside of the open mouth, at ({x}, {y}), is not dark")


def test_a_hidden_mouth_is_really_covered():
    hidden = [f for f in synth.plan(1500, seed=2) if f["photo"]["occluder"]]
    assert len(hidden) >= 10, f"only {len(hidden)} of 1,500 faces have a hidden mouth"
    for face in hidden:
        visible = dict(face, photo=dict(face["photo"], occluder=None))
        x0, y0 = np.floor(synth.mouth_outline(face).min(axis=0)).astype(int)
        x1, y1 = np.ceil(synth.mouth_outline(face).max(axis=0)).astype(int)
        covered = np.asarray(synth.render(face), float)[y0:y1 + 1, x0:x1 + 1]
        bare = np.asarray(synth.render(visible), float)[y0:y1 + 1, x0:x1 + 1]
        assert np.abs(covered - bare).mean() > 15, (
            f"{face['filename']}: the {face['photo']['occluder']} hardly changes the mouth's pixels; "
            "it should cover it")


def test_smiles_and_non_smiles_are_drawn_differently():
    faces = [f for f in synth.plan(200, seed=4) if f["photo"]["mouth"] in ("grin", "neutral")]
    widths = {kind: [np.ptp(synth.mouth_outline(f)[:, 0]) for f in faces if f["photo"]["mouth"] == kind]
              for kind in ("grin", "neutral")}
    assert min(widths["grin"]) > 1.5 * max(widths["neutral"]), (
        f"open smiles ({min(widths['grin']):.0f} px and up) should be far wider than closed mouths "
        f"(up to {max(widths['neutral']):.0f} px) so that the smile survives the shrink to 64x64")


# --- determinism ----------------------------------------------------------------------


def test_same_seed_gives_identical_files_whatever_the_workers(small, tmp_path):
    other = synth.generate(tmp_path, **SMALL, seed=SEED, workers=2, progress=False)
    first, second = all_files(small), all_files(other)
    assert first.keys() == second.keys(), "workers=1 and workers=2 wrote different sets of files"
    different = [name for name in first if name != MARKER_NAME and first[name] != second[name]]
    assert not different, f"same seed, workers=1 vs workers=2: these files differ: {different[:5]}"


def test_another_seed_gives_other_faces(small, tmp_path):
    other = synth.generate(tmp_path, **SMALL, seed=SEED + 1, workers=1, progress=False)
    same = [n for n in NAMES
            if (small / "img_align_celeba" / n).read_bytes() == (other / "img_align_celeba" / n).read_bytes()]
    assert not same, f"seeds {SEED} and {SEED + 1} drew identical images: {same[:5]}"
    assert lines(small, "list_attr_celeba.txt") != lines(other, "list_attr_celeba.txt"), (
        "two seeds gave the same attributes")


# --- generate on an existing folder -----------------------------------------------------


def test_same_arguments_return_the_cached_set_without_rewriting(small):
    before = {p: p.stat().st_mtime_ns for p in small.rglob("*")}
    started = time.perf_counter()
    assert synth.generate(small.parent, **SMALL, seed=SEED, workers=1, progress=False) == small
    seconds = time.perf_counter() - started
    after = {p: p.stat().st_mtime_ns for p in small.rglob("*")}
    assert before == after, "calling generate again with the same arguments rewrote files; it should use the cache"
    assert seconds < 1, f"the cached call took {seconds:.2f} s; it should return at once"


def test_other_arguments_replace_only_the_generators_files(small, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(small, root / "celeba")
    (root / "celeba" / "my_notes.txt").write_text("keep me")
    left_over = root / "celeba" / f".{TEXT_FILES[0]}.x1y2z3.part"  # as an interrupted atomic write leaves it
    left_over.write_text("half a file")
    synth.generate(root, n_train=5, n_valid=2, n_test=1, seed=99, workers=1, progress=False)
    marker = json.loads((root / "celeba" / MARKER_NAME).read_text())
    assert marker["seed"] == 99 and marker["counts"] == {"train": 5, "valid": 2, "test": 1}, (
        f"after regenerating with other arguments the marker says {marker}")
    images = sorted(p.name for p in (root / "celeba" / "img_align_celeba").iterdir())
    assert images == NAMES[:8], f"the old set's images were not removed: img_align_celeba/ holds {len(images)} files"
    assert (root / "celeba" / "my_notes.txt").read_text() == "keep me", "generate removed a file it did not write"
    assert not left_over.exists(), f"generate left {left_over.name}, a temporary file of an interrupted write"


def test_an_interrupted_set_is_finished(small, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(small, root / "celeba")
    # as if the run had stopped while drawing: no marker yet, some images missing
    params = {"generator": "kata.synth", "version": synth.VERSION, "seed": SEED,
              "counts": {"train": 40, "valid": 12, "test": 12}}
    (root / "celeba" / MARKER_NAME).unlink()
    (root / "celeba" / PARTIAL_NAME).write_text(json.dumps(params))
    for name in NAMES[10:20]:
        (root / "celeba" / "img_align_celeba" / name).unlink()
    synth.generate(root, **SMALL, seed=SEED, workers=1, progress=False)
    finished, original = all_files(root / "celeba"), all_files(small)
    assert finished.keys() == original.keys(), (
        f"after finishing, the files differ: {sorted(set(finished) ^ set(original))}")
    assert all(finished[n] == original[n] for n in finished if n != MARKER_NAME), (
        "the finished set differs from an uninterrupted one")


def test_a_dataset_it_did_not_draw_is_never_touched(tmp_path):
    folder = tmp_path / "celeba"
    (folder / "img_align_celeba").mkdir(parents=True)
    (folder / "img_align_celeba" / "000001.jpg").write_bytes(b"a real photo")
    for name in TEXT_FILES:
        (folder / name).write_text("real CelebA\n")
    before = all_files(folder)
    with pytest.raises(FileExistsError) as info:
        synth.generate(tmp_path, n_train=4, n_valid=1, n_test=1, workers=1, progress=False)
    assert "real CelebA" in str(info.value) and str(folder) in str(info.value), (
        f"the refusal should say that {folder} may hold the real CelebA; it says: {info.value}")
    assert all_files(folder) == before, "generate changed a data set it did not draw"


# --- imports -------------------------------------------------------------------------


def test_drawing_a_set_does_not_import_torch():
    code = ("import sys, kata.data, kata.data.synth; kata.data.generate; kata.data.ATTRIBUTE_NAMES; "
            "print(sorted(m for m in ('torch', 'torchvision') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"importing kata.data.synth failed:\n{done.stderr}"
    assert done.stdout.strip() == "[]", (
        f"importing kata.data and kata.data.synth loaded {done.stdout.strip()}; `kata data` must not import torch")


def test_the_package_exports_the_generator_lazily():
    import kata.data

    assert kata.data.generate is synth.generate and kata.data.plan is synth.plan
    assert set(kata.data.__all__) <= set(dir(kata.data)), "kata.data.__all__ names something dir() does not show"
    assert not hasattr(kata.data, "no_such_name"), "an unknown name should raise AttributeError"


# --- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, words", [
    (dict(n_train=-1), "n_train must not be negative"),
    (dict(n_valid=2.5), "n_valid must be a whole number"),
    (dict(n_test="10"), "n_test must be a whole number"),
    (dict(n_train=True), "n_train must be a whole number"),
    (dict(n_train=0, n_valid=0, n_test=0), "all 0"),
    (dict(seed=-3), "seed"),
    (dict(workers=0), "workers"),
])
def test_bad_arguments_are_refused_clearly(tmp_path, kwargs, words):
    arguments = dict(n_train=4, n_valid=1, n_test=1, workers=1, progress=False) | kwargs
    with pytest.raises(ValueError) as info:
        synth.generate(tmp_path, **arguments)
    assert words in str(info.value), f"generate({kwargs}) said {str(info.value)!r}; it should say {words!r}"
    assert not (tmp_path / "celeba").exists(), f"generate({kwargs}) wrote files before refusing"


def test_a_root_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("not a folder")
    with pytest.raises(ValueError) as info:
        synth.generate(path, n_train=2, n_valid=1, n_test=1, workers=1, progress=False)
    assert "is a file" in str(info.value), f"generate(<a file>) said {str(info.value)!r}; say that root is a file"


def test_progress_bar_goes_to_stderr(tmp_path, capsys):
    synth.generate(tmp_path, n_train=3, n_valid=1, n_test=1, workers=1, progress=True)
    out, err = capsys.readouterr()
    assert "drawing faces" in err and "5/5" in err, f"progress=True should show a tqdm bar on stderr; got {err!r}"
    assert out == "", f"generate printed to stdout: {out!r}"
