"""What a hand-in's source declares (kata/records/declared.py), as `kata grade` checks it.

A patched `Adam.step` can step with the book's learning rate while the code asks for another, and a property
can show the book's dropout rate over another one: the answers of such code are asked in a process of its own
(its patches never reach this one), its source is read here, and the checks run on both with
`--records-from`, as graded: the checks that hold the learner to the book's settings fail on what the source
declares, and honest spellings of the book's settings (a factory, NumPy scalars, parameter groups) pass.
"""

import inspect
import json
import subprocess
import sys
from pathlib import Path

# Imported before the inner runs (pytester's snapshot of sys.modules), as in test_known_wrong.py.
import hypothesis
import matplotlib.pyplot
import numpy
import PIL.Image
import pytest
import torch
import torchvision.transforms
from in_process import Verdicts
from test_grade_samples import (
    EQUIVALENT_TRAINING,
    FORGED_TRAINING,
    equivalent_training,
    forged_model,
    forged_training,
    patched_training,
    sources,
    write,
)

import kata.checks.book
from kata import records
from kata.project import locate
from kata.records.declared import read
from kata.records.wire import untyped

pytest_plugins = ["pytester"]
BOOK_DECLARES = read({"book.py": inspect.getsource(kata.checks.book)}, "book")   # as tests/test_training.py reads it
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, PIL.Image, torch, torchvision.transforms)

# The records of the code in a folder, asked as the sandbox asks them, in a process of their own; the source's
# records are read in this one, as the grader reads them.
APART = """
import json, sys
from pathlib import Path
from kata import records
from kata.harness.target import Target
from kata.project import locate
folder, exercise, out = sys.argv[1:]
target, path = Target(Path(folder)), locate().records_of(exercise)
with records.using(records.Context(None, Path(out).parent, None)):
    found = dict(records.ask_exercise(exercise, lambda: target.module(exercise), 3, path))
Path(out).write_text(json.dumps({"seed": 3, "records": {exercise: found}}))
"""


def graded(pytester, folder: Path, exercise: str, check: str) -> tuple[str, str]:
    """(outcome, message) of ``check`` on the code in ``folder``, as `kata grade` checks it."""
    out = folder.parent / "answers.json"
    done = subprocess.run([sys.executable, "-c", APART, str(folder), exercise, str(out)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(out.read_text())
    files = {p.name: p.read_text() for p in folder.glob("*.py")}
    found["records"][exercise] |= dict(records.ask_source(exercise, files, 3, locate().records_of(exercise)))
    out.write_text(json.dumps(found))
    seen, said = Verdicts(), {}

    class Messages:
        def pytest_runtest_logreport(self, report):
            if report.failed:
                said[report.nodeid] = str(report.longrepr)

    pytester.runpytest_inprocess("-p", "no:cacheprovider", "--target", str(folder), "--records-from", str(out),
                                 str(locate().checks_of(exercise)), "-k", check, plugins=[seen, Messages()])
    (nodeid, outcome), = seen.outcomes.items()
    return outcome, said.get(nodeid, "")


@pytest.mark.parametrize("kind", sorted(FORGED_TRAINING))
def test_a_wrong_learning_rate_under_a_patched_optimizer_fails(kind, tmp_path, pytester):
    folder = write(tmp_path / "hand-in", {"training": forged_training(kind)})
    outcome, message = graded(pytester, folder, "training", "test_training_follows_the_books_algorithm_exactly")
    assert outcome == "failed" and "lr=0.01" in message, (kind, outcome, message[-2000:])


def test_a_patched_library_under_the_books_settings_passes(tmp_path, pytester):
    folder = write(tmp_path / "hand-in", {"training": patched_training()})
    outcome, message = graded(pytester, folder, "training", "test_training_follows_the_books_algorithm_exactly")
    assert outcome == "passed", message[-2000:]


def test_a_wrong_dropout_rate_under_a_patched_layer_fails(tmp_path, pytester):
    folder = write(tmp_path / "hand-in", {"model": forged_model()})
    outcome, message = graded(pytester, folder, "model", "test_layers_match_the_book_in_order")
    assert outcome == "failed" and "p=0.2" in message, (outcome, message[-2000:])


@pytest.mark.parametrize("kind", sorted(EQUIVALENT_TRAINING))
def test_the_books_optimizer_and_loss_spelled_otherwise_are_read_as_the_books(kind):
    files = {"training.py": equivalent_training(kind)}
    (name, found), = [(n, f) for n, f in records.ask_source("training", files, 0, locate().records_of("training"))]
    from test_training import BOOK_DECLARES, losses_problem, optimizers_problem


    data = untyped(found["cases"][0]["data"])
    assert not optimizers_problem(data, BOOK_DECLARES) and not losses_problem(data, BOOK_DECLARES), (kind, data)
    assert not data["unresolved"], f"{kind}: honest code sent to review"


# Where the source does not fix a setting, the reading says where and the teacher reviews it: no point is lost.
UNFIXED = {"an argument": "args.lr", "a rebound name": "LR", "keyword arguments": "**"}


@pytest.mark.parametrize("how", sorted(UNFIXED))
def test_a_setting_the_source_does_not_fix_goes_to_review_and_costs_nothing(how):
    from test_training import BOOK_DECLARES, optimizers_problem

    from kata.records.declared import read

    source = sources()["training"].replace("lr=0.001", {"an argument": "lr=args.lr", "a rebound name": "lr=LR",
                                                        "keyword arguments": "**settings"}[how])
    source += "\nLR = 0.01\nLR /= 10\n" if how == "a rebound name" else ""
    found = read({"training.py": source}, "training")
    assert optimizers_problem(found, BOOK_DECLARES) is None
    assert any(UNFIXED[how] in note for note in found["unresolved"]), found["unresolved"]
