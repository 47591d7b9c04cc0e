"""Known-wrong implementations must fail the checks written against them.

Each mutant is the reference solution with one mistake a learner makes, made
by a text substitution. The named checks are called directly on it (with their
fixtures filled in) and must fail; the self-check (plain `pytest`) already
shows that the unmodified solutions pass them.
"""

import functools
import importlib.util
import inspect

import pytest

from kata.target import CHECKS_DIR, PROJECT_ROOT, Target

# (exercise, what the learner got wrong, [(old, new), ...], checks that must fail)
MUTANTS = [
    ("model", "no Sigmoid at the end",
     [("    model.add_module('sigmoid', nn.Sigmoid())\n", "")],
     ["test_layers_match_the_book_in_order", "test_output_is_one_probability_per_image"]),
    ("model", "Dropout(0.2)",
     [("nn.Dropout(p=0.5)", "nn.Dropout(p=0.2)")],
     ["test_layers_match_the_book_in_order"]),
    ("model", "kernel_size=5 in the last conv",
     [("out_channels=256, kernel_size=3, padding=1", "out_channels=256, kernel_size=5, padding=2")],
     ["test_layers_match_the_book_in_order", "test_parameter_count_is_the_books_388673"]),
    ("model", "MaxPool2d where the book has AvgPool2d(8)",
     [("nn.AvgPool2d(kernel_size=8)", "nn.MaxPool2d(kernel_size=8)")],
     ["test_layers_match_the_book_in_order"]),
    ("model", "the Linear layer built first (other initial weights)",
     [("    model = nn.Sequential()\n", "    fc = nn.Linear(256, 1)\n    model = nn.Sequential()\n"),
      ("model.add_module('fc', nn.Linear(256, 1))", "model.add_module('fc', fc)")],
     ["test_initial_weights_are_the_books_under_manual_seed_1"]),
    ("model", "moves itself to the CPU",
     [("    return model\n", "    return model.to('cpu')\n")],
     ["test_build_model_leaves_placement_to_the_caller"]),
    ("model", "one model cached at module level",
     [("def build_model() -> nn.Sequential:\n", "_cache = []\n\n\ndef build_model() -> nn.Sequential:\n"
                                                "    if _cache:\n        return _cache[0]\n"),
      ("    return model\n", "    _cache.append(model)\n    return model\n")],
     ["test_each_call_builds_a_new_model"]),

    ("data", "the errata's attribute 18 (Heavy_Makeup)",
     [("SMILING = 31", "SMILING = 18")],
     ["test_smiling_is_attribute_31", "test_get_smile_reads_attribute_31",
      "test_get_smile_returns_the_smiling_attribute", "test_load_splits_labels_are_the_smiling_attribute"]),
    ("data", "resize before the centre crop",
     [("        transforms.CenterCrop([178, 178]),\n        transforms.Resize([64, 64]),\n",
       "        transforms.Resize([64, 64]),\n        transforms.CenterCrop([178, 178]),\n")],
     ["test_transform_is_the_books_compose", "test_eval_transform_matches_the_book_exactly",
      "test_crop_happens_before_resize", "test_eval_transform_gives_a_3x64x64_float_tensor_in_0_1"]),
    ("data", "no random flip",
     [("        transforms.RandomHorizontalFlip(),\n", "")],
     ["test_transform_is_the_books_compose", "test_train_transform_flips_about_half_the_time",
      "test_train_transform_matches_the_book_under_the_same_seed"]),
    ("data", "a random crop for evaluation too",
     [("transforms.CenterCrop([178, 178])", "transforms.RandomCrop([178, 178])")],
     ["test_eval_transform_is_deterministic", "test_eval_transform_matches_the_book_exactly"]),
    ("data", "Resize(64) keeps the aspect ratio when the crop is skipped",
     [("        transforms.CenterCrop([178, 178]),\n        transforms.Resize([64, 64]),\n",
       "        transforms.Resize(64),\n")],
     ["test_eval_transform_gives_a_3x64x64_float_tensor_in_0_1", "test_crop_happens_before_resize"]),
    ("data", "torchvision's CelebA instead of the kata's",
     [("from kata.celeba import CelebA", "from torchvision.datasets import CelebA")],
     ["test_load_splits_sizes_and_first_items", "test_load_splits_calls_celeba_as_the_book_does"]),
    ("data", "a random subset instead of the first n",
     [("Subset(dataset, torch.arange(n))", "Subset(dataset, torch.randperm(len(dataset))[:n])")],
     ["test_load_splits_sizes_and_first_items"]),
    ("data", "the eval transform on the training split",
     [("split='train', target_type='attr', download=False,\n                                  transform=train_transform()",
       "split='train', target_type='attr', download=False,\n                                  transform=eval_transform()")],
     ["test_load_splits_augments_only_the_training_split"]),
    ("data", "no target_transform: labels are all 40 attributes",
     [(", target_transform=get_smile)", ")")],
     ["test_load_splits_labels_are_the_smiling_attribute", "test_load_splits_calls_celeba_as_the_book_does"]),
    ("data", "download=True",
     [("split='valid', target_type='attr', download=False", "split='valid', target_type='attr', download=True")],
     ["test_load_splits_calls_celeba_as_the_book_does"]),
    ("data", "no error when asked for too many images",
     [("    if n > len(dataset):", "    if False:")],
     ["test_load_splits_refuses_more_images_than_a_split_has"]),
    ("data", "the validation loader shuffles",
     [("DataLoader(valid, batch_size, shuffle=False)", "DataLoader(valid, batch_size, shuffle=True)")],
     ["test_only_the_training_loader_shuffles"]),
    ("data", "the training loader does not shuffle",
     [("DataLoader(train, batch_size, shuffle=True)", "DataLoader(train, batch_size)")],
     ["test_only_the_training_loader_shuffles"]),
    ("data", "the last partial batch dropped",
     [("DataLoader(train, batch_size, shuffle=True)", "DataLoader(train, batch_size, shuffle=True, drop_last=True)")],
     ["test_make_loaders_batches_every_image_once"]),
    ("data", "batch size 64 by default",
     [("batch_size=32", "batch_size=64")],
     ["test_make_loaders_default_batch_size_is_32"]),
]


@functools.cache
def load_checks(exercise):
    spec = importlib.util.spec_from_file_location(f"_kata_checks_{exercise}", CHECKS_DIR / f"test_{exercise}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mutant_target(tmp_path, exercise, edits):
    source = (PROJECT_ROOT / "solutions" / f"{exercise}.py").read_text()
    for old, new in edits:
        assert old in source, f"the mutant's text {old!r} is no longer in solutions/{exercise}.py"
        source = source.replace(old, new)
    folder = tmp_path / "mutant"
    folder.mkdir()
    (folder / f"{exercise}.py").write_text(source)
    return Target(folder, "mutant")


@pytest.mark.parametrize(
    "exercise, mistake, edits, failing",
    [pytest.param(*m, id=f"{m[0]}: {m[1]}") for m in MUTANTS])
def test_known_wrong_implementation_fails_its_checks(exercise, mistake, edits, failing, tmp_path, request):
    checks = load_checks(exercise)
    target = mutant_target(tmp_path, exercise, edits)
    target.load(exercise)  # the mistake is in the code's behaviour, not a module that won't import
    passed = []
    for name in failing:
        check = getattr(checks, name)
        fixtures = {}
        for param in inspect.signature(check).parameters:
            if param == exercise:
                fixtures[param] = target.module(exercise)
            elif param in ("celeba_root", "monkeypatch", "tmp_path"):
                fixtures[param] = request.getfixturevalue(param)
        if not any(fails(check, {**fixtures, **params}) for params in parametrizations(check)):
            passed.append(name)
    assert not passed, f"{exercise} with '{mistake}' passed {passed}, which should catch it"


def parametrizations(check):
    """The keyword sets a check's @pytest.mark.parametrize gives it ([{}] if none)."""
    sets = [{}]
    for mark in getattr(check, "pytestmark", []):
        if mark.name == "parametrize":
            names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
            values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
            sets = [{**s, **dict(zip(names, v))} for s in sets for v in values]
    return sets


def fails(check, kwargs) -> bool:
    try:
        check(**kwargs)
    except Exception:  # a failed assertion, or a crash: it fails
        return True
    except BaseException as exc:  # pytest.fail raises an OutcomeException
        if type(exc).__name__ == "Failed":
            return True
        raise
    return False
