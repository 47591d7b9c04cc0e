"""`kata.check("NAME")`: an exercise's checks on the functions a notebook defines (kata/notebook.py).

The checks run in this process (pytest inside pytest), as they do in a Jupyter
kernel, against the namespace the test builds the way a notebook would: cells
compiled under their own file names and run in one globals dict.
"""

import contextlib
import io
import json
import linecache
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import kata
from kata import progress
from kata.curriculum import UnknownExercise, get
from kata.harness import outcomes
from kata.notebook import NamespaceTarget, outputs
from kata.project import locate

NOTEBOOK = locate().root / "notebooks" / "devices.ipynb"
NOTEBOOKS = ["devices.ipynb", "devices.ko.ipynb"]
# A function of the seed's mistakes cell rewritten with a slip of another kind: it raises in the learner's code.
SLIP = "def device_of(obj):\n    return obj.device\n"


def cells(*tags: str) -> list[str]:
    """The sources of the demo notebook's code cells carrying these tags, in order."""
    nb = json.loads(NOTEBOOK.read_text())
    return ["".join(c["source"]) for c in nb["cells"]
            if c["cell_type"] == "code" and set(tags) & set(c["metadata"].get("tags", []))]


def namespace(*sources: str) -> dict:
    """A notebook's globals after running these cells (their lines known to linecache, as IPython's are)."""
    ns = {"__name__": "__main__"}
    for number, source in enumerate(sources, 1):
        name = f"<cell {number}>"
        linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
        exec(compile(source, name, "exec"), ns)
    return ns


def without_places(message: str) -> str:
    """A message without the places it names (a cell or the notebook for a notebook; a file or
    folder for a .py)."""
    message = re.sub(r"<module '(\w+)' of [^>]*>", r"<module \1>", message)
    return re.sub(r"^\S.*?, line \d+, in ", "in ", message, flags=re.M)


def test_correct_functions_are_reported_done_and_recorded(tmp_path, capsys):
    ns = namespace((locate().solutions / "devices.py").read_text())
    result = kata.check("devices", ns, folder=tmp_path)
    out = capsys.readouterr().out
    assert result.ok and result.done and result.failed == 0 and result.passed == result.total > 0, result
    assert "  1. devices " in out and "done" in result.row and "is done" in out
    assert progress.read(tmp_path)["devices"].done, "the run is recorded in the notebook's folder"


def test_the_seeds_mistakes_get_the_blocks_and_row_of_the_py_route(tmp_path, capsys):
    sources = [cells("imports")[0], cells("seed-mistakes")[0], SLIP]
    result = kata.check("devices", namespace(*sources), folder=tmp_path / "nb")
    assert not result.ok and result.failed > 0 and not result.missing
    out = capsys.readouterr().out
    assert "<cell 3>, line 2, in device_of: AttributeError" in out, \
        "an error raised in the learner's code names its cell and line"
    for block in result.blocks:
        assert f"{outcomes.heading(block)}\n{outcomes.render_block(block)}" in out, "each block, once"

    folder = tmp_path / "exercises"
    folder.mkdir()
    (folder / "devices.py").write_text("\n\n".join(sources))
    printed, log = io.StringIO(), tmp_path / "report.jsonl"
    with contextlib.redirect_stdout(printed):
        pytest.main(["--target", str(folder), str(get("devices").checks()), "-q", "--color=no",
                     "-p", "no:cacheprovider", "--capture=sys", f"--report-log={log}"])
    with open(log) as lines:
        by_file = outcomes.records(lines)
    assert ({r.check: (r.outcome, without_places(r.message)) for r in by_file}
            == {r.check: (r.outcome, without_places(r.message)) for r in result.records})
    blocks = outcomes.summarize(by_file).blocks
    assert ([(b.checks, without_places(b.message)) for b in blocks]
            == [(b.checks, without_places(b.message)) for b in result.blocks]), "one block per cause, the same ones"
    row = next(line for line in printed.getvalue().splitlines() if line.startswith("  1. devices "))
    assert result.row == row.rstrip()


def test_missing_functions_are_each_named(tmp_path, capsys):
    ns = namespace("import torch\ndef pick_device():\n    return torch.device('cpu')\n")
    result = kata.check("devices", ns, folder=tmp_path)
    out = capsys.readouterr().out
    assert result.missing == ["device_of", "to_device", "to_python", "host_copy"]
    for name in result.missing:
        assert any(f"defines no `{name}`" in b.message for b in result.blocks), name
        assert f"`{name}`" in out
    assert not result.ok


def test_the_stubs_cells_are_not_started_and_an_unset_constant_is_at_a_stub(tmp_path, capsys):
    # The data stub's cells as a notebook would run them: SMILING = None and functions that raise
    # NotImplementedError. Every check stops at a stub, the row says so, and so does the record.
    from kata import pristine

    stub = pristine.stub_source("data")
    if stub is None:
        pytest.skip("no pristine stub of data (no .kata/pristine/ snapshot, no git history)")
    result = kata.check("data", namespace(stub), folder=tmp_path)
    out = capsys.readouterr().out
    assert not result.ok and result.passed == 0 and result.failed == result.total > 0, result
    assert {r.outcome for r in result.records} == {"todo"}, [(r.check, r.outcome) for r in result.records]
    assert result.row.endswith("not started: every check stops at the stub") and result.row in out
    assert "`SMILING` is not set yet" in out
    standing = progress.read(tmp_path)["data"]
    assert standing.todo == standing.total == result.total


def test_an_unknown_exercise_is_a_clear_error_listing_the_names():
    with pytest.raises(UnknownExercise, match="devices, data, model, training, plotting, sync"):
        kata.check("device", {})


def test_a_checks_patch_of_the_module_reaches_the_notebooks_globals(tmp_path):
    # test_data patches `CelebA` in the learner's module: the notebook's functions read their
    # globals from the namespace, so the patch must land there too, and be undone there.
    ns = {"__name__": "__main__", "CelebA": "the real one"}
    module = NamespaceTarget(ns, tmp_path).load("data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "CelebA", "a spy")
        assert ns["CelebA"] == "a spy" == module.CelebA
    assert ns["CelebA"] == "the real one" == module.CelebA


def test_import_kata_stays_light():
    code = "import sys, kata; print(sorted({'torch', 'pytest'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


@pytest.mark.slow
def test_after_a_backward_pass_the_cuda_checks_are_left_out_and_it_says_why(tmp_path):
    # The simulated accelerator can't come after a process's first backward pass: a notebook that
    # trained before its first kata.check gets the other checks, a note, and no "done".
    script = ("import torch, kata\n"
              "torch.ones(2, requires_grad=True).sum().backward()\n"
              f"ns = {{'__name__': '__main__'}}; exec(open({str(locate().solutions / 'devices.py')!r}).read(), ns)\n"
              f"r = kata.check('devices', ns, folder={str(tmp_path)!r})\n"
              "print('result', r.ok, r.done, r.complete)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "result True False False" in done.stdout, done.stdout + done.stderr
    assert "the checks marked cuda were left out" in done.stdout and "restart the kernel" in done.stdout
    assert "devices" not in progress.read(tmp_path), "a partial run is not recorded"


@pytest.mark.slow
@pytest.mark.parametrize(("name", "done", "failing"), [
    ("devices.ipynb", "Exercise 1. devices is done.", "failing"),
    ("devices.ko.ipynb", "연습 문제 1. devices: 완료했습니다.", "실패"),
])
def test_the_devices_notebook_runs_from_top_to_bottom(tmp_path, name, done, failing):
    # What CI runs (the notebook step of .ci/run): every cell, in a fresh kernel, here in a
    # copy of the notebook so that its progress is recorded in tmp_path. The Korean notebook
    # is the same cells, its text in Korean, and the kata speaking Korean. The outputs saved
    # with the notebook are this run's (seconds aside): `python -m kata.notebook run --save`
    # writes them, and leaves an unchanged notebook as it is.
    if not os.environ.get("CI"):
        pytest.importorskip("nbclient", reason="the notebook extra: pip install -e '.[notebook]'")
        pytest.importorskip("ipykernel", reason="the notebook extra: pip install -e '.[notebook]'")
    import nbformat
    import torch

    notebook = NOTEBOOK.with_name(name)
    copy = tmp_path / notebook.name
    copy.write_bytes(notebook.read_bytes())
    ran = subprocess.run([sys.executable, "-m", "kata.notebook", "run", "--save", str(copy)], capture_output=True,
                         text=True, timeout=600, cwd=locate().root)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "every cell ran" in ran.stdout and done in ran.stdout, ran.stdout[-3000:]
    assert failing in ran.stdout, "the seed's mistakes come first, and fail"
    assert progress.read(tmp_path)["devices"].done
    if torch.cuda.is_available() or torch.backends.mps.is_available():
        return   # the saved outputs are the simulated accelerator's (CI's); a real one names other devices
    assert outputs(nbformat.read(copy, as_version=4)) == outputs(nbformat.read(notebook, as_version=4)), (
        f"notebooks/{name}'s saved outputs are not what it prints now: run "
        f"`python -m kata.notebook run --save notebooks/{name}` and commit it")
    assert copy.read_bytes() == notebook.read_bytes(), "an unchanged notebook is saved as it was"


# --- the notebooks as saved: with their outputs, each mistake showing the kata's lesson ------------------------

HEADING = re.compile(r"^_{3,} (test_\w+)(?:\[[^\]]*\])? _{3,}$", re.M)
# How a block shows an exception raised in the learner's code (kata/harness/outcomes.py), not a lesson:
# "<cell 2>, line 10, in to_device: TypeError: iteration over a 0-d tensor"
RAISED = re.compile(r"line \d+, in \S+: [A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b")


def saved(name: str) -> list[dict]:
    return json.loads(NOTEBOOK.with_name(name).read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_notebooks_are_saved_with_the_outputs_of_one_run_top_to_bottom(name):
    code = [c for c in saved(name) if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), \
        f"notebooks/{name}: run it top to bottom and save it (`python -m kata.notebook run --save`)"
    checks = [c for c in code if "check" in c["metadata"].get("tags", [])]
    assert checks and all(c["outputs"] for c in checks), f"notebooks/{name}: each kata.check cell shows its output"
    for cell in code:
        for out in cell["outputs"]:
            assert out["output_type"] != "error" and out.get("name") != "stderr", (name, out)
            text = json.dumps(out, ensure_ascii=False)
            for place in (locate().root, Path.home(), Path(tempfile.gettempdir())):
                assert str(place) not in text, f"notebooks/{name}: a machine's path ({place}) in {text}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_of_the_seeds_mistakes_shows_the_katas_lesson(name):
    # The cell after the seed's mistakes: each function's belief fails checks of that function, and
    # each block says the rule it broke (an assertion of the checks), never an error its code raised.
    cells_ = saved(name)
    at = next(i for i, c in enumerate(cells_) if "seed-mistakes" in c["metadata"].get("tags", []))
    text = "".join("".join(out.get("text", "")) for out in cells_[at + 1]["outputs"])
    functions = {"pick_device", "device_of", "to_device", "to_python", "host_copy"}
    blocks = HEADING.split(text)[1:]   # check, its block, check, its block...
    failing = set(blocks[0::2])
    for function in functions:
        assert any(check.startswith(f"test_{function}") for check in failing), (
            f"notebooks/{name}: no check of {function} fails on the seed's mistakes:\n{text}")
    assert not RAISED.search(text), f"notebooks/{name}: a mistake shows a raw Python error, not the lesson:\n{text}"
    for check, message in zip(blocks[0::2], blocks[1::2]):
        assert message.strip(), f"notebooks/{name}: {check} fails without a message"


def test_the_korean_notebook_is_the_english_one_in_korean():
    english, korean = (json.loads(NOTEBOOK.with_name(n).read_text())["cells"] for n in ("devices.ipynb",
                                                                                       "devices.ko.ipynb"))
    assert [c["cell_type"] for c in english] == [c["cell_type"] for c in korean], "the same cells, in order"
    for en, ko in zip(english, korean):
        if en["cell_type"] == "code":
            assert "".join(ko["source"]).startswith("".join(en["source"]).split("assert")[0].rstrip()), \
                "a code cell of the Korean notebook is the English one (its language set, its messages in Korean)"
        else:
            assert re.search("[가-힣]", "".join(ko["source"])), "a text cell of the Korean notebook is in Korean"
