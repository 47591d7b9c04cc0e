"""What a learner's run prints: one cause, one message, and little else.

The checks' output is read as a learner reads it, from `pytest exercises/NAME.py`
on two of the commonest mistakes: a `plt.show()` in `plot_history`, and the
seed's history of tensors in `train`. Each cause is shown once, the whole run
stays under 150 lines, and nothing a learner can't use is printed: no
Hypothesis reproduction advice, no pytest-benchmark or pytest-timeout
settings, no internal class names.
"""

import re

# Imported here, before the inner runs: pytester's snapshot of sys.modules would drop what the
# first run imports, and torch, NumPy and torchvision can't be imported twice in one process.
import hypothesis
import matplotlib.pyplot
import numpy
import pytest
import torch
import torchvision.transforms

from kata.checks.mutants import write_mutant
from kata.project import locate

pytest_plugins = ["pytester"]
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, torch, torchvision.transforms)

SHOW = ("    _draw(fig, history)\n    return fig\n",
        "    _draw(fig, history)\n    import matplotlib.pyplot as plt\n    plt.show()\n    return fig\n")
SEED = ("            correct_total += is_correct.sum().item()", "            correct_total += is_correct.sum()")
NOISE = re.compile(r"reproduce_failure|@seed\(|benchmark: \d|timeout method|SimTensor|_kata_target_|kata\.sim\.|"
                   r"lines always run by failing|Traceback \(most recent call last\)")


@pytest.mark.parametrize("exercise, edit, cause", [
    ("plotting", SHOW, "called plt.show()"),
    ("training", SEED, "where a Python float belongs"),
], ids=["plt.show() in plot_history", "the seed's tensor history"])
def test_a_common_mistake_prints_its_cause_once_in_under_150_lines(pytester, tmp_path, exercise, edit, cause):
    folder = write_mutant(tmp_path / "mine", exercise, edit)
    result = pytester.runpytest_inprocess("--target", str(folder), str(locate().checks_of(exercise)),
                                          "-p", "no:cacheprovider")
    lines = result.outlines + result.errlines
    text = "\n".join(lines)
    assert result.ret == 1, text
    assert len(lines) < 150, f"{len(lines)} lines of output for one mistake:\n{text}"
    causes = [line for line in lines if cause in line]
    assert causes, f"the cause ({cause!r}) is not in the output:\n{text}"
    assert re.search(r"and \d+ more checks? fails? for the same reason", text), (
        f"the other failures of the same cause are not folded into one line:\n{text}")
    noise = sorted(set(NOISE.findall(text)))
    assert not noise, f"the output shows what a learner can't use: {noise}\n{text}"
