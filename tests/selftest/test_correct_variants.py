"""Every correct answer passes, and every failure says one true thing.

An independent implementation of every stub's specification, written from
CONTRACT.md alone in a style unlike solutions/ (tests/selftest/variants/independent),
passes every check; so does the book's own code wherever the book is right
(variants/book: its data cells, with either size form of its transforms, its
model cells with the shape checks between them, its training loop once it sums
Python floats). The book's wrong parts fail, each with its true reason:

- variants/styled: a second independent implementation, in yet another style
  (the grader's tests use it as an ordinary learner's correct submission);
- variants/learner, variants/learner_alt: what a learner writes from the stubs alone, each decision
  spelled another way (the issue #19 catalogue of correct alternatives);
- variants/modern: a third, in today's idioms: torchvision.transforms.v2
  (another order of random draws, pixels equal to float precision), an
  evaluate under @torch.inference_mode() that moves the model there, a
  pyplot figure of float() entries, a loop-built CNN;
- variants/seed: the learner's note, `is_correct.sum()` and a live plot inside
  `train`: CPU tensors in the histories on the CPU, the seed's crash on an
  accelerator (with the line of the note's code);
- variants/book_github: the book's GitHub loop, `is_correct.sum().cpu()`: CPU
  tensors on any device;
- variants/book_plotting: the book's plotting cell (`plt.show()`) and the note's
  live plot (`plt.pause(0.1)`): they wait; without those calls, tensors that
  require grad are refused by NumPy, and tensors on an accelerator are the
  seed's crash, while the seed's CPU history plots.

The checks run on each variant through pytest itself, in process (as in
test_known_wrong.py), those of the exercises the variant's folder holds. A new
exercise may come without variants: the run says which exercises lack them (a
skip with its reason, never a failure), so nothing but its reference shows its
checks pass correct code until they are written. The last part reads the checks' source: every assert a
learner can see carries its own message.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

# What the checks import is imported here, before the inner runs: pytester's snapshot of
# sys.modules would drop it after the first run, and NumPy, torch and torchvision can't be
# imported twice in one process.
import hypothesis
import matplotlib.pyplot
import numpy
import PIL.Image
import pytest
import torch
import torchvision.transforms

from kata import curriculum
from kata.project import locate

pytest_plugins = ["pytester"]

# Held here so that they stay imported across the inner runs (see above).
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, PIL.Image, torch, torchvision.transforms)

VARIANTS = Path(__file__).with_name("variants")
ALL = curriculum.names()

# Said by no message a learner sees: internal class and module names.
INTERNALS = re.compile(r"SimTensor|kata\.sim\b|<class '|_kata_target_\d|test_\w+\.BlockingCall")

# The true reasons, as the checks word them (kata.checks.messages and the check files).
REFUSE = r"^load_splits must raise ValueError when asked for more images than a split has"
CPU_TENSOR = r"^A CPU tensor where a Python float belongs"
SEEDS_CRASH = r"^NumPy can't read a tensor on the accelerator: the seed's crash"
GRAD_TOO = r"(.|\n)*NumPy refuses tensors that require grad too(.|\n)*Can't call numpy\(\) on Tensor that requires grad"
SHOWS = r"called plt\.show\(\)"
PAUSES = r"called plt\.pause\(\)"


class Outcomes:
    """A plugin for the inner run: each check's outcome and, for a failure, its text."""

    def __init__(self):
        self.results: dict[str, tuple[str, str]] = {}   # item name (with its parameters) -> (outcome, text)
        self.cuda: set[str] = set()

    def pytest_runtest_makereport(self, item, call):
        if item.get_closest_marker("cuda"):
            self.cuda.add(item.name)
        if call.excinfo is None:
            if call.when == "call":
                self.results.setdefault(item.name, ("passed", ""))
            return
        if call.excinfo.errisinstance(pytest.skip.Exception):
            self.results[item.name] = ("skipped", str(call.excinfo.value))
            return
        own = (AssertionError, pytest.fail.Exception)  # a check's message; anything else is a crash
        text = "\n".join(str(leaf) if isinstance(leaf, own) else f"{type(leaf).__name__}: {leaf}"
                         for leaf in leaves(call.excinfo.value))
        self.results[item.name] = ("failed", text)


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


# The variants every exercise has in the end: correct code written apart from solutions/, in four styles.
GENERAL = ("independent", "styled", "modern", "learner", "learner_alt")


def held(folder: Path) -> tuple[str, ...]:
    """The exercises whose module ``folder`` holds, in the curriculum's order."""
    return tuple(name for name in ALL if (folder / f"{name}.py").is_file())


def run_checks(pytester, folder: Path, modules=None, select: list[str] | None = None) -> Outcomes:
    """Run the checks of ``modules`` (default: those ``folder`` holds) on ``folder``; only the checks named in
    ``select`` if given."""
    modules = held(folder) if modules is None else modules
    outcomes = Outcomes()
    args = ["--target", str(folder), *(str(locate().checks_of(m)) for m in modules), "-p", "no:cacheprovider", "-q"]
    if select:
        args += ["-k", " or ".join(select)]
    pytester.inline_run(*args, plugins=[outcomes])
    assert outcomes.results, f"no check ran on {folder}"
    return outcomes


def verdict(outcomes: Outcomes, expected: dict[str, str]) -> list[str]:
    """What differs from ``expected`` ({check name, or name[params]: a regex its failure must match}):
    every other check that ran must pass (a cuda check may skip where there is no accelerator)."""
    wrong = []
    for name, (outcome, text) in sorted(outcomes.results.items()):
        base = name.split("[")[0]
        if INTERNALS.search(text):
            wrong.append(f"{name}: its message names internals: {INTERNALS.search(text).group(0)!r}\n    {text}")
        pattern = expected.get(name, expected.get(base))
        if outcome == "skipped" and name in outcomes.cuda:
            continue
        if pattern is None:
            if outcome != "passed":
                wrong.append(f"{name} {outcome}, and it should pass:\n    {text[:1500]}")
        elif outcome != "failed":
            wrong.append(f"{name} {outcome}, and it should fail with /{pattern}/")
        elif not re.search(pattern, text):
            wrong.append(f"{name} failed, but not for the true reason /{pattern}/:\n    {text[:1500]}")
    missing = [name for name in expected if name not in outcomes.results
               and not any(n.split("[")[0] == name for n in outcomes.results)]
    wrong += [f"{name} did not run (renamed or removed?)" for name in missing]
    return wrong


def assert_verdict(outcomes: Outcomes, expected: dict[str, str], what: str):
    wrong = verdict(outcomes, expected)
    assert not wrong, f"{what}:\n  " + "\n  ".join(wrong)


# --- correct code passes -------------------------------------------------------------


def test_an_independent_implementation_of_the_contract_passes_every_check(pytester):
    outcomes = run_checks(pytester, VARIANTS / "independent")
    assert_verdict(outcomes, {}, "an implementation written from CONTRACT.md alone must pass every check")


def test_another_independent_implementation_in_another_style_passes_every_check(pytester):
    # variants/styled: an OrderedDict CNN, a NamedTuple history, singledispatch, math.fsum, a dataclass
    # live plot (the grader's tests also hold it: never flagged, 100 points).
    outcomes = run_checks(pytester, VARIANTS / "styled")
    assert_verdict(outcomes, {}, "a second implementation of the contract, in another style, must pass every check")


def test_a_third_implementation_in_todays_idioms_passes_every_check(pytester):
    # variants/modern: transforms.v2, torch.inference_mode, plt.subplots, a CNN built in a loop.
    outcomes = run_checks(pytester, VARIANTS / "modern")
    assert_verdict(outcomes, {}, "an implementation in today's idioms (transforms.v2, inference_mode) "
                                 "must pass every check")


@pytest.mark.parametrize("folder", ["learner", "learner_alt"])
def test_a_learners_own_alternatives_pass_every_check(pytester, folder):
    # variants/learner and learner_alt (issue #19): what a learner writes from the stubs alone, each
    # spelling a decision another way: the index looked up by name, padding='same', an OrderedDict
    # CNN, @torch.no_grad() and torch.inference_mode() blocks, enumerate, samples counted with
    # x.size(0), float(loss), model.zero_grad() first, a move only where needed, a dataclass LivePlot,
    # pyplot figures closed at once, one 2-vector of sums on the device, .cpu() then .tolist().
    outcomes = run_checks(pytester, VARIANTS / folder)
    assert_verdict(outcomes, {}, f"variants/{folder}, a learner's correct alternatives, must pass every check")


def test_the_books_data_model_and_training_cells_pass_where_the_book_is_right(pytester):
    # The book takes any n for its subsets: the kata's rule to refuse a split too small is the one it breaks.
    outcomes = run_checks(pytester, VARIANTS / "book", ("data", "model", "training"))
    assert_verdict(outcomes, {"test_load_splits_refuses_more_images_than_a_split_has": REFUSE},
                   "the book's code must pass every check it meets, and fail the refusal alone, saying why")


def test_the_books_transforms_pass_with_integer_sizes_too(pytester, tmp_path):
    folder = tmp_path / "book_integer_sizes"
    folder.mkdir()
    source = (VARIANTS / "book" / "data.py").read_text()
    changed = source.replace("[178, 178]", "178").replace("[64, 64]", "64")
    assert changed.count("(178)") == 2 and changed.count("(64)") == 2, "the book's transforms are no longer there"
    (folder / "data.py").write_text(changed)
    outcomes = run_checks(pytester, folder, ("data",))
    assert_verdict(outcomes, {"test_load_splits_refuses_more_images_than_a_split_has": REFUSE},
                   "CenterCrop(178), RandomCrop(178) and Resize(64) after the crop are the book's transforms")


# --- the book's wrong parts fail, each for its true reason ----------------------------


def test_the_seeds_training_fails_with_the_seeds_crash_wherever_its_tensors_show(pytester):
    outcomes = run_checks(pytester, VARIANTS / "seed", ("training",), [
        "test_histories_are_four_lists_of_python_floats", "test_training_on_the_accelerator_keeps_float_histories",
        "test_evaluate_on_the_accelerator_returns_floats"])
    # its own plotting inside train hands matplotlib the device tensors: the line is named, and the CPU tensors on
    # the CPU and evaluate's device tensors, the same code's, are said under that one cause
    crash = SEEDS_CRASH + r"(.|\n)*seed/training\.py, line \d+, in train: ax2\.plot\(x_arr, accuracy_hist_train"
    here = crash + r"(.|\n)*and here the same code gives:\n  "
    assert_verdict(outcomes, {
        "test_histories_are_four_lists_of_python_floats": here + r"accuracy_hist_train\[0\] is a 0-d torch\.Tensor "
                                                                 r"on cpu",
        "test_training_on_the_accelerator_keeps_float_histories": crash,
        "test_evaluate_on_the_accelerator_returns_floats":
            here + r"evaluate's accuracy is a 0-d torch\.Tensor on simgpu",
    }, "the learner's note's loop must fail for its true reason, the seed's crash, wherever its tensors show")


def test_the_books_github_training_fails_with_cpu_tensors(pytester):
    outcomes = run_checks(pytester, VARIANTS / "book_github", ("training",), [
        "test_histories_are_four_lists_of_python_floats", "test_training_on_the_accelerator_keeps_float_histories"])
    assert_verdict(outcomes, {"test_histories_are_four_lists_of_python_floats": CPU_TENSOR,
                              "test_training_on_the_accelerator_keeps_float_histories": CPU_TENSOR},
                   "the book's GitHub loop (is_correct.sum().cpu()) must fail for CPU tensors, on any device")


def test_the_books_plotting_cell_fails_because_it_waits(pytester):
    outcomes = run_checks(pytester, VARIANTS / "book_plotting", ("plotting",), [
        "test_plot_history_returns_a_figure_with_two_panels_side_by_side", "test_live_plot_never_shows_or_pauses"])
    assert_verdict(outcomes, {"test_plot_history_returns_a_figure_with_two_panels_side_by_side": SHOWS,
                              "test_live_plot_never_shows_or_pauses": PAUSES},
                   "the book's plt.show() and the note's plt.pause() must fail because they wait")


def test_the_books_plotting_without_waiting_fails_for_grad_and_device_tensors_only(pytester, tmp_path):
    folder = tmp_path / "book_plotting_no_wait"
    folder.mkdir()
    source = (VARIANTS / "book_plotting" / "plotting.py").read_text()
    changed = source.replace("    plt.show()\n", "").replace("        plt.pause(0.1)\n", "")
    assert changed.count("plt.") == source.count("plt.") - 2, "the book's plt.show() / plt.pause() moved"
    (folder / "plotting.py").write_text(changed)
    outcomes = run_checks(pytester, folder, ("plotting",), [
        "test_plot_history_accepts_each_kind_of_entry", "test_plot_history_draws_accelerator_tensors",
        "test_live_plot_draws_the_seeds_history_of_tensors", "test_plot_history_never_shows_or_pauses"])
    accepts = "test_plot_history_accepts_each_kind_of_entry"
    assert_verdict(outcomes, {
        # the same code meets the seed's crash on the accelerator: the grad tensors it refuses too are said under it
        f"{accepts}[0-d tensors with requires_grad]": SEEDS_CRASH + GRAD_TOO,
        f"{accepts}[0-d tensors with a grad_fn]": SEEDS_CRASH + GRAD_TOO,
        f"{accepts}[a mix in each list]": SEEDS_CRASH + GRAD_TOO,
        # the seed's history on an accelerator is the seed's crash; on the CPU it plots (and passes)
        "test_plot_history_draws_accelerator_tensors": SEEDS_CRASH + r"(.|\n)*plotting\.py, line \d+, in plot_history",
    }, "the book's plotting cell, not waiting, must fail only for tensors NumPy refuses, each for its reason")


# --- every assert a learner can see carries its own message ---------------------------


def check_files() -> list[Path]:
    return sorted(locate().checks.glob("test_*.py"))


@pytest.mark.parametrize("path", check_files(), ids=lambda p: p.name)
def test_every_assert_in_the_checks_carries_a_message(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    bare = [f"{path.name}, line {node.lineno}: {ast.unparse(node)[:100]}"
            for node in ast.walk(tree) if isinstance(node, ast.Assert) and node.msg is None]
    assert not bare, ("an assert without a message shows a learner pytest's introspection of the check's own "
                      "variables (internal names included): give each its message\n  " + "\n  ".join(bare))
    docstring = ast.get_docstring(tree) or ""
    assert "PYTEST_DONT_REWRITE" in docstring, (
        f"{path.name}: its docstring must say PYTEST_DONT_REWRITE, so that a failed assert shows its message alone "
        "(not pytest's 'assert <class ...> is float' introspection under it)")


def test_each_variant_folder_holds_exercise_modules_only():
    # A variant is a target: `pytest --target FOLDER` imports its modules by name.
    for folder in sorted(p for p in VARIANTS.iterdir() if p.is_dir() and p.name != "__pycache__"):
        names = {p.stem for p in folder.glob("*.py")}
        assert names and names <= set(ALL), f"{folder.name} holds {sorted(names)}; a variant holds exercise modules"


@pytest.mark.parametrize("name", ALL)
def test_each_exercise_has_its_correct_variants(name):
    lacking = [folder for folder in GENERAL if not (VARIANTS / folder / f"{name}.py").is_file()]
    if lacking:
        pytest.skip(f"{name} has no correct variant in variants/{{{','.join(lacking)}}}/{name}.py: only its reference "
                    "shows that its checks pass correct code (write them from CONTRACT.md and its stub alone)")
