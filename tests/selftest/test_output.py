"""What a learner reads about a run: one cause, one block, the same everywhere, and little else.

Two of the commonest mistakes, a `plt.show()` in `plot_history` and the seed's
history of tensors in `train`, are read as a learner reads them: in the output of
`pytest exercises/NAME.py`, on `kata watch`'s screen, in a notebook's `kata.check`
and in `kata grade`'s feedback (which the grader builds from the run's report
log with the outcome model's renderer, kata/harness/outcomes.py). Each shows the
cause once, stays under 150 lines, and prints nothing a learner can't use: no
Hypothesis reproduction advice, no pytest-benchmark or pytest-timeout settings,
no internal class or module names. The run's report log rebuilds exactly the
blocks and rows its terminal showed.

Untouched stubs read "not started" for every exercise, in English and Korean, in
every place that counts: the run's table, the progress file and `kata list`,
`kata watch`'s row and the grader's outcomes. An unset constant (`SMILING =
None`) is a stub as an unwritten function is; a written one, even wrong, is not.
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

import kata
from kata import commands, curriculum, i18n, pristine, progress
from kata.checks.mutants import mutated, write_mutant
from kata.commands.watch import Round, render
from kata.harness import outcomes
from kata.project import locate

pytest_plugins = ["pytester"]
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, torch, torchvision.transforms)
LIMIT = 150

SHOW = ("    _draw(fig, history)\n    return fig\n",
        "    _draw(fig, history)\n    import matplotlib.pyplot as plt\n    plt.show()\n    return fig\n")
SEED = ("            correct_total += is_correct.sum().item()", "            correct_total += is_correct.sum()")
NOISE = re.compile(r"reproduce_failure|@seed\(|Falsifying|benchmark: \d|timeout method|SimTensor|_kata_target_|"
                   r"kata\.sim\.|lines always run by failing|Traceback \(most recent call last\)")
MISTAKES = pytest.mark.parametrize("exercise, edit, cause", [
    ("plotting", SHOW, "called plt.show()"),
    ("training", SEED, "where a Python float belongs"),
], ids=["plt.show() in plot_history", "the seed's tensor history"])


def read_as_a_learner(text: str, cause: str, where: str) -> None:
    lines = text.splitlines()
    assert len(lines) < LIMIT, f"{where}: {len(lines)} lines of output for one mistake:\n{text}"
    assert cause in text, f"{where}: the cause ({cause!r}) is not in the output:\n{text}"
    assert re.search(r"and \d+ more checks? fails? for the same reason", text), (
        f"{where}: the other failures of the same cause are not folded into one line:\n{text}")
    noise = sorted(set(NOISE.findall(text)))
    assert not noise, f"{where}: the output shows what a learner can't use: {noise}\n{text}"


def failures_section(lines: list[str]) -> str:
    """The terminal's failure details: from the line after `= FAILURES =` to the next rule of `=` or `-`."""
    start = next(k for k, line in enumerate(lines) if re.fullmatch(r"=+ FAILURES =+", line)) + 1
    end = next(k for k in range(start, len(lines)) if re.fullmatch(r"[=-]+ .* [=-]+", lines[k]))
    return "\n".join(lines[start:end])


@MISTAKES
def test_a_common_mistake_reads_the_same_in_pytest_watch_and_grade_feedback(pytester, monkeypatch, tmp_path,
                                                                           exercise, edit, cause):
    monkeypatch.setenv("COLUMNS", str(outcomes.WIDTH))
    folder = write_mutant(tmp_path / "mine", exercise, edit)
    log = tmp_path / "report.jsonl"
    result = pytester.runpytest_inprocess("--target", str(folder), str(locate().checks_of(exercise)),
                                          "-p", "no:cacheprovider", f"--report-log={log}")
    lines = result.outlines + result.errlines
    assert result.ret == 1, "\n".join(lines)
    read_as_a_learner("\n".join(lines), cause, "pytest")

    with open(log) as f:
        records = outcomes.records(f)
    summary = outcomes.summarize(records)
    shown = "\n".join(f"{outcomes.heading(b)}\n{outcomes.render_block(b)}" for b in summary.blocks)
    assert failures_section(lines) == shown, "the report log rebuilds exactly the blocks the terminal showed"
    for row in summary.rows:
        assert outcomes.render_row(row) in lines, f"the report log rebuilds the table's row: {row}"

    screen = render(Round(curriculum.get(exercise), records, seconds=1.0), folder)
    read_as_a_learner(screen, cause, "kata watch")
    assert shown in screen, "kata watch shows the blocks pytest shows"

    feedback = "\n\n".join([*(outcomes.render_block(b) for b in summary.blocks),
                            *(outcomes.render_row(r) for r in summary.rows)])
    read_as_a_learner(feedback, cause, "kata grade's feedback")


@MISTAKES
def test_a_common_mistake_reads_the_same_in_a_notebook(tmp_path, capsys, exercise, edit, cause):
    namespace = {"__name__": "__main__"}
    exec(compile(mutated(exercise, edit), "<cell 1>", "exec"), namespace)
    result = kata.check(exercise, namespace, folder=tmp_path)
    text = capsys.readouterr().out
    assert not result.ok
    read_as_a_learner(text, cause, "kata.check")
    for block in result.blocks:
        assert f"{outcomes.heading(block)}\n{outcomes.render_block(block)}" in text


@pytest.mark.parametrize("exercise, edit, cause", [
    ("plotting", SHOW, "called plt.show()"),
    # on the CPU its entries are CPU tensors, said under the seed's crash that the same code meets on the accelerator
    ("training", SEED, "where a Python float belongs"),
], ids=["plt.show() in plot_history", "the seed's tensor history"])
def test_one_mistake_is_one_block(pytester, tmp_path, exercise, edit, cause):
    folder = write_mutant(tmp_path / "mine", exercise, edit)
    log = tmp_path / "report.jsonl"
    pytester.runpytest_inprocess("--target", str(folder), str(locate().checks_of(exercise)), "-p", "no:cacheprovider",
                                 f"--report-log={log}")
    with open(log) as f:
        blocks = outcomes.summarize(outcomes.records(f)).blocks
    assert len(blocks) == 1, f"{len(blocks)} blocks for one mistake: " + "; ".join(
        b.message.splitlines()[0][:100] for b in blocks)


def test_an_endless_loop_costs_its_exercise_two_time_limits_not_one_per_check(pytester, tmp_path):
    """Each of sync's checks trains an epoch; with train_epoch looping forever, two reach their time limit and
    the rest of the exercise fails at once, saying why (kata/harness/plugin.py, STRIKES), as in the grader."""
    from kata.harness.plugin import STRIKES

    folder = write_mutant(tmp_path / "mine", "sync", ("def train_epoch(model, dl, loss_fn, optimizer, device):\n",
                                                       "def train_epoch(model, dl, loss_fn, optimizer, device):\n"
                                                       "    while True:\n        pass\n"))
    log = tmp_path / "report.jsonl"
    pytester.runpytest_inprocess("--target", str(folder), str(locate().checks_of("sync")), "-p", "no:cacheprovider",
                                 "--timeout", "1", f"--report-log={log}")
    with open(log) as f:
        records = [r for r in outcomes.records(f) if r.exercise == "sync"]
    timed_out = [r for r in records if "did not finish within 1 s" in (r.message or "")]
    not_run = [r for r in records if (r.message or "").startswith(f"not run: {STRIKES} checks of this exercise")]
    assert len(timed_out) == STRIKES, [r.message for r in records]
    assert len(not_run) == len(records) - STRIKES > 0, [r.message for r in records]


NOT_STARTED = {"en": "not started: every check stops at the stub", "ko": "시작 전: 모든 검사가 스텁에서 멈춥니다"}


def test_fresh_stubs_read_not_started_for_every_exercise_everywhere(pytester, monkeypatch, tmp_path, capsys):
    from kata.grading import runner

    folder = tmp_path / "exercises"
    if pristine.write_stubs(folder):
        pytest.skip("no pristine stubs (no .kata/pristine/ snapshot, no git history)")
    monkeypatch.setenv("COLUMNS", str(outcomes.WIDTH))
    log = tmp_path / "report.jsonl"
    result = pytester.runpytest_inprocess(str(folder), "-p", "no:cacheprovider", f"--report-log={log}")
    exercises = curriculum.exercises()
    table = [line for line in result.outlines if re.match(r"  \d\. ", line)]
    assert len(table) == len(exercises), "\n".join(result.outlines)
    for ex, line in zip(exercises, table):
        assert re.fullmatch(rf"  {ex.number}\. {ex.name} +0/\d+ +passed +{NOT_STARTED['en']}", line), table

    records = outcomes.records(log.read_text().splitlines())
    assert records and {r.outcome for r in records} == {"todo"}, sorted({(r.check, r.outcome) for r in records
                                                                          if r.outcome != "todo"})
    summary = outcomes.summarize(records)
    assert [outcomes.render_row(r) for r in summary.rows] == table, "the report log rebuilds the table"
    standings = progress.read(folder)
    assert all(standings[ex.name].todo == standings[ex.name].total > 0 for ex in exercises), standings
    capsys.readouterr()   # the run's own output
    assert commands.main(["list", "--target", str(folder)]) == 0
    listed = capsys.readouterr().out
    assert listed.count(NOT_STARTED["en"]) == len(exercises) and "failing" not in listed, listed
    for ex in exercises:
        screen = render(Round(ex, [r for r in records if r.exercise == ex.name], seconds=1.0), folder)
        assert outcomes.render_row(summary.row(ex.name)) in screen, "kata watch shows the row the table shows"
    graded = runner.outcomes(log.read_text())
    assert len(graded) == len(records) and all(r["todo"] for r in graded.values()), \
        "the grader reads every check of the stubs as at a stub"

    monkeypatch.setenv("KATA_LANG", "ko")
    monkeypatch.setattr(i18n, "_chosen", None)
    assert all(r.status == NOT_STARTED["ko"] for r in summary.rows), [r.status for r in summary.rows]
    assert commands.main(["list", "--target", str(folder)]) == 0
    assert capsys.readouterr().out.count(NOT_STARTED["ko"]) == len(exercises)


@pytest.mark.parametrize("value, outcome, lesson", [
    ("20", "failed", "the label is the wrong attribute"),
    ('"Smiling"', "failed", "the label is the wrong attribute"),
    ("None", "todo", "`SMILING` is not set yet: see the comment above it, and `kata hint data SMILING`"),
], ids=["a wrong index", "the name", "left unset"])
def test_a_written_constant_fails_with_its_lesson_and_one_left_unset_stops_at_the_stub(pytester, tmp_path, value,
                                                                                        outcome, lesson):
    folder = write_mutant(tmp_path / "mine", "data", ("SMILING = 31", f"SMILING = {value}"))
    log = tmp_path / "report.jsonl"
    pytester.runpytest_inprocess("--target", str(folder), str(locate().checks_of("data")), "-p", "no:cacheprovider",
                                 f"--report-log={log}")
    records = outcomes.records(log.read_text().splitlines())
    smiling = next(r for r in records if r.check == "test_smiling_is_attribute_31")
    assert (smiling.outcome, lesson in smiling.message) == (outcome, True), smiling
    assert [r.check for r in records if r.outcome == "todo" and r is not smiling] == [], \
        "the rest of the exercise is written: only the constant's own check can be at a stub"
    row = outcomes.summarize(records).row("data")
    assert (row.todo, row.failed > 0) == ((1, True) if outcome == "todo" else (0, True)), row.status
