"""The outcome model (kata/harness/outcomes.py): records in, one block per cause and a row per exercise out.

Most of these build records by hand and run in milliseconds; one reads the report
log of a real `pytest --target FOLDER --report-log FILE` process and rebuilds
exactly the blocks, in the order, that its terminal showed. A stub is a stub
whatever stops the check: an unwritten function, an unwritten class's method, a
constant left at its stub's value (`SMILING = None`).
"""

import json
import os
import re
import subprocess
import sys

import pytest

from kata import curriculum, pristine
from kata.harness import failures, outcomes
from kata.harness.target import NotSetYet, Target, module_of
from kata.project import locate


def entry(nodeid, when="call", status="passed", **props):
    """A report as pytest-reportlog writes it (``status``: pytest's outcome), with the kata's properties."""
    exercise = curriculum.exercise_of(nodeid).name
    return {"$report_type": "TestReport", "nodeid": nodeid, "when": when, "outcome": status, "longrepr": None,
            "user_properties": outcomes.properties(exercise, **props)}


def failed(nodeid, message, kind="AssertionError", todo=False, when="call"):
    exercise = curriculum.exercise_of(nodeid).name
    return entry(nodeid, when, "failed", outcome="todo" if todo else "failed", message=message,
                 cause=outcomes.cause_key(exercise, kind, message))


def test_a_checks_reports_make_one_record_its_first_failure_deciding():
    lines = [json.dumps({"pytest_version": "9", "$report_type": "SessionStart"}),
             json.dumps(entry("tests/test_model.py::test_a", "setup")),
             json.dumps(entry("tests/test_model.py::test_a", outcome="passed")),
             json.dumps(failed("tests/test_model.py::test_a", "teardown broke", when="teardown")),
             json.dumps(entry("tests/test_model.py::test_b", "setup", "skipped", outcome="skipped",
                              message="needs an accelerator")),
             json.dumps(failed("tests/test_model.py::test_c", "first")),
             json.dumps(failed("tests/test_model.py::test_c", "second", when="teardown")),
             json.dumps({"$report_type": "TestReport", "nodeid": "tests/selftest/test_x.py::test_y", "when": "call",
                         "outcome": "failed", "user_properties": []}),
             "", json.dumps({"exitstatus": 1, "$report_type": "SessionFinish"})]
    found = {r.check: r for r in outcomes.records(lines)}
    assert list(found) == ["test_a", "test_b", "test_c"], "one record per kata check, other tests left out"
    assert (found["test_a"].outcome, found["test_a"].message) == ("failed", "teardown broke")
    assert (found["test_b"].outcome, found["test_b"].message) == ("skipped", "needs an accelerator")
    assert found["test_c"].message == "first"


def test_pytests_own_outcome_stands_where_the_kata_decided_nothing():
    bare = {"$report_type": "TestReport", "nodeid": "tests/test_sync.py::test_s", "when": "setup",
            "outcome": "skipped", "longrepr": ["f.py", 1, "Skipped: slow: runs with --slow"],
            "user_properties": [["kata_exercise", "sync"]]}
    (record,) = outcomes.records([bare])
    assert (record.outcome, record.message) == ("skipped", "slow: runs with --slow")


def test_one_cause_is_one_block_in_curriculum_order_and_the_row_counts_it():
    stub = "exercises/data.py: `get_smile` is not written yet"
    records = outcomes.records([
        failed("tests/test_data.py::test_d1", stub, "NotImplementedError", todo=True),
        failed("tests/test_data.py::test_d2", stub, "NotImplementedError", todo=True),
        failed("tests/test_devices.py::test_v[1]", "to_python gave 1 of 2 floats\n  the first was 0.5"),
        entry("tests/test_devices.py::test_w"),
        failed("tests/test_devices.py::test_v[2]", "to_python gave 2 of 3 floats\n  the first was 7"),
        failed("tests/test_devices.py::test_x", "another cause"),
    ])
    summary = outcomes.summarize(records, expected={"tests/test_devices.py::test_never": "devices"})
    assert [b.checks for b in summary.blocks] == [
        ("tests/test_devices.py::test_v[1]", "tests/test_devices.py::test_v[2]"), ("tests/test_devices.py::test_x",),
        ("tests/test_data.py::test_d1", "tests/test_data.py::test_d2")], "devices first: the curriculum's order"
    first = summary.blocks[0]
    assert outcomes.render_block(first) == ("to_python gave 1 of 2 floats\n  the first was 0.5\n\n"
                                            "and 1 more check fails for the same reason: test_v[2]")
    assert outcomes.render_block(summary.blocks[1]) == "another cause"
    assert summary.blocks[2].todo and not first.todo
    rows = [outcomes.render_row(r) for r in summary.rows]
    width = curriculum.name_width()   # the names as wide as the curriculum's longest
    assert rows == [f"  1. {'devices':<{width}}   1/5   passed   3 failing (2 causes), 1 not run",
                    f"  2. {'data':<{width}}   0/2   passed   not started: every check stops at the stub"]
    assert not summary.row("devices").done and summary.row("model") is None


def test_a_block_names_at_most_eight_other_checks():
    records = outcomes.records([failed(f"tests/test_model.py::test_m[{k}]", "same") for k in range(12)])
    (block,) = outcomes.summarize(records).blocks
    assert outcomes.same_reason(block) == ("and 11 more checks fail for the same reason: "
                                           + ", ".join(f"test_m[{k}]" for k in range(1, 9)) + " and 3 more")
    assert outcomes.heading(block) == f"{'_' * 34} test_m[0] {'_' * 35}", "pytest's rule, 80 wide"


def test_rows_say_done_skipped_partial_and_unchecked():
    ex = curriculum.get("sync")
    name = f"{'sync':<{curriculum.name_width()}}"   # the names as wide as the curriculum's longest
    done = f"  6. {name}   4/6   passed   done (2 skipped)"
    assert outcomes.render_row(outcomes.Row(ex, passed=4, skipped=2)) == done
    assert outcomes.Row(ex, passed=4, skipped=2).done
    partial = outcomes.Row(ex, passed=3, partial=True)
    assert partial.status == "all pass of the checks run" and not partial.done
    assert outcomes.render_row(outcomes.Row(ex)) == f"  6. {name}   -/-    not checked yet"
    assert outcomes.Row(ex, failed=5, causes=1).status == "5 failing (one cause)"
    assert outcomes.Row(ex, failed=1, causes=1, todo=2).status == "1 failing, 2 at a stub"


def test_messages_are_cleaned_of_internal_names_and_hypothesis_advice():
    text = ("history is a _kata_target_3.training.History, not a tuple\n"
            "@reproduce_failure('6.1', b'AAA')\n  the rest  \n")
    assert outcomes.clean(text) == "history is a training.History, not a tuple\n  the rest"


def test_the_grouping_rule_masks_numbers_in_the_first_line_only():
    assert outcomes.cause_key("data", "AssertionError", "gave 3 of 40\n  detail 1") == \
        outcomes.cause_key("data", "AssertionError", "gave 12 of 40\n  detail 2")
    assert outcomes.cause_key("data", "AssertionError", "a") != outcomes.cause_key("model", "AssertionError", "a")
    assert outcomes.cause_key("data", "AssertionError", "a") != outcomes.cause_key("data", "TypeError", "a")


SEED_DEVICE_OF = "def device_of(obj):\n    return obj.device\n"


def test_a_real_report_log_rebuilds_the_blocks_and_rows_the_terminal_showed(tmp_path):
    folder = tmp_path / "exercises"
    if pristine.write_stubs(folder):
        pytest.skip("no pristine stubs (no .kata/pristine/ snapshot, no git history)")
    devices = (locate().solutions / "devices.py").read_text()
    seed = re.sub(r"def device_of\(obj\):\n(    .*\n|\n)*?(?=def )", SEED_DEVICE_OF + "\n\n", devices, count=1)
    assert seed != devices
    (folder / "devices.py").write_text(seed)
    log = tmp_path / "report.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["COLUMNS"] = str(outcomes.WIDTH)
    checks = locate().checks
    run = subprocess.run([sys.executable, "-m", "pytest", str(folder), str(checks / "test_data.py"),
                          str(checks / "test_devices.py"), str(checks / "test_model.py"), "-p", "no:cacheprovider",
                          f"--report-log={log}"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    lines = run.stdout.splitlines()
    assert run.returncode == 1, run.stdout + run.stderr
    with open(log) as f:
        summary = outcomes.summarize(outcomes.records(f))
    start = lines.index(next(line for line in lines if re.fullmatch(r"=+ FAILURES =+", line))) + 1
    end = next(k for k in range(start, len(lines)) if re.fullmatch(r"[=-]+ .* [=-]+", lines[k]))
    assert "\n".join(lines[start:end]) == "\n".join(
        f"{outcomes.heading(b)}\n{outcomes.render_block(b)}" for b in summary.blocks), run.stdout
    order = [b.exercise for b in summary.blocks]
    assert order == sorted(order, key=curriculum.names().index), "in the table's order (data's checks run first)"
    assert order[0] == "devices" and {"data", "model"} <= set(order)
    device_of = [b for b in summary.blocks if "in device_of: AttributeError" in b.message]
    assert len(device_of) == 1 and len(device_of[0].checks) > 1, "one line of code, one error: one block"
    assert [outcomes.render_row(r) for r in summary.rows] == [line for line in lines if re.match(r"  \d\. ", line)]


# --- a stub is a stub: an unwritten function, an unwritten class, a constant left unset ---------------------


@pytest.mark.parametrize("source", ["SMILING = None\n", "SMILING = ...\n"], ids=["None", "Ellipsis"])
def test_a_constant_left_at_the_stubs_value_stops_its_check_at_the_stub(tmp_path, source):
    (tmp_path / "data.py").write_text("# The label's index, as an int.\n" + source)
    target = Target(tmp_path)
    with pytest.raises(NotSetYet) as excinfo:
        target.module("data").SMILING   # noqa: B018 - reading it is what stops at the stub
    failure = failures.describe(excinfo, target, timeout=60)
    assert failure.todo, "an unset constant is a stub, as an unwritten function is"
    assert failure.message == (f"{target.display('data')}: `SMILING` is not set yet: see the comment above it, "
                               "and `kata hint data SMILING`")
    assert module_of(target.module("data")).SMILING is (None if "None" in source else ...), \
        "the module itself keeps the value: the learner's own code reads its global as written"


@pytest.mark.parametrize("value", ["31", "20", "'Smiling'", "0"])
def test_a_written_constant_is_read_as_written_even_when_wrong(tmp_path, value):
    (tmp_path / "data.py").write_text(f"SMILING = {value}\n")
    assert Target(tmp_path).module("data").SMILING == eval(value), "a wrong value is the check's to teach about"


def test_a_stub_is_counted_the_same_whatever_stops_it():
    """A constant's check, a function's and a class's method's: each at a stub, one block each, and the row says
    the exercise is not started (the table, kata list, kata watch, kata.check and the grader all read it)."""
    records = outcomes.records([
        failed("tests/test_data.py::test_smiling", "exercises/data.py: `SMILING` is not set yet", "NotSetYet",
               todo=True),
        failed("tests/test_data.py::test_get_smile", "exercises/data.py: `get_smile` is not written yet",
               "NotImplementedError", todo=True),
        failed("tests/test_plotting.py::test_live", "exercises/plotting.py: `LivePlot.__init__` is not written yet",
               "NotImplementedError", todo=True),
    ])
    summary = outcomes.summarize(records)
    assert all(b.todo for b in summary.blocks) and len(summary.blocks) == 3
    assert [r.status for r in summary.rows] == ["not started: every check stops at the stub"] * 2
    assert all((r.failed, r.causes) == (0, 0) for r in summary.rows)
