"""`kata doctor`: what the machine has, where each check runs, the table on every accelerator.

The quick form runs for real (one fresh process runs the table on the simulator); the steps of
`--full` that need minutes or a GPU are replaced by canned results, except in one slow test that
runs `kata doctor --full` on this machine as CI does.
"""

import json

import pytest

from kata import commands
from kata.commands import doctor
from kata.conformance import load, machine, report

ROWS = load()


def a_machine(**changes):
    here = machine.Machine(python="3.12.3", platform="Linux x86_64", torch="2.11.0+cu128", torchvision="0.26.0",
                           torch_cuda="12.8", simulator=True, simulator_why="torch 2.11.0+cu128: verified",
                           packages={name: "1.0" for name, _ in {**machine.NEEDED, **machine.OPTIONAL}.values()})
    for key, value in changes.items():
        setattr(here, key, value)
    return here


GPU = "NVIDIA H200 (compute capability 9.0, 140 GiB, 1 device)"


def steps_of(m, has_solutions=True, has_corpus=True):
    return {s.name: (s.where, s.why) for s in machine.plan(m, has_solutions, has_corpus)}


def test_the_plan_says_where_each_check_runs_and_why():
    cpu_only = steps_of(a_machine(cuda_why_not="torch.cuda.is_available() is False"))
    assert cpu_only["the checks marked cuda (pytest exercises, kata.check)"] == (
        ["sim"], "on the simulated accelerator (no CUDA or MPS here)")
    assert cpu_only["conformance table"] == (["sim"], "on the simulated accelerator")
    assert cpu_only["kata bench GPU rows"][0] == [] and cpu_only["sync cross-check"][0] == []
    assert "needs CUDA" in cpu_only["sync cross-check"][1]
    gpu = steps_of(a_machine(cuda=GPU))
    assert gpu["conformance table"] == (["cuda", "sim"], "on real CUDA and the simulated accelerator")
    assert gpu["cuda-marked checks"][0] == ["cuda", "sim"] and gpu["kata bench GPU rows"][0] == ["cuda"]
    assert gpu["sync cross-check"][0] == ["cuda"] and gpu["the corpus under kata run"][0] == ["cuda", "sim"]
    assert gpu["the checks marked cuda (pytest exercises, kata.check)"][1] == f"on real CUDA ({GPU})"
    assert cpu_only["the corpus under kata run"][0] == [] and "needs CUDA" in cpu_only["the corpus under kata run"][1]


def test_missing_packages_and_a_student_release_stop_only_the_steps_that_need_them():
    without = a_machine(cuda=GPU)
    without.packages["pytest-benchmark"] = None
    without.packages["watchfiles"] = None
    assert without.missing(machine.NEEDED) == ["pytest-benchmark", "watchfiles"]
    steps = steps_of(without)
    assert steps["conformance table"][0] == ["cuda", "sim"]
    assert steps["cuda-marked checks"] == ([], "pytest can't run the checks without pytest-benchmark")
    release = steps_of(a_machine(cuda=GPU), has_solutions=False, has_corpus=False)
    assert release["cuda-marked checks"][0] == [] and "student release" in release["cuda-marked checks"][1]
    assert release["the corpus under kata run"] == ([], "this copy has no tests/selftest/test_run.py (a student "
                                                        "release)")
    none = steps_of(a_machine(simulator=False, simulator_why="the simulated accelerator supports torch 2.11 to "
                                                            "2.14; this is torch 2.15.0", cuda_why_not="a CPU build"))
    assert none["conformance table"] == ([], "no accelerator, and the simulated accelerator supports torch 2.11 to "
                                             "2.14; this is torch 2.15.0")


def table(counts):
    return {"summary": "s", "seconds": 1.0, "exit": 0,
            "outcomes": [{"id": i, "status": "holds", "got": "", "syncs": n} for i, n in counts.items()]}


def test_the_cross_check_compares_the_sync_rows_counted_both_ways():
    cuda = table({"sync-item": 1, "sync-print": 7, "sync-host-mask": 0, "mix-cat": None})
    sim = table({"sync-item": 1, "sync-print": 1, "sync-host-mask": 1, "mix-cat": None})
    checked = doctor.cross_check(ROWS, cuda, sim)
    assert checked["rows"] == [  # exact where the table counts (item: 1), sync or not where it says true/false
        {"id": "sync-item", "cuda": 1, "sim": 1, "agree": True},
        {"id": "sync-print", "cuda": 7, "sim": 1, "agree": True},
        {"id": "sync-host-mask", "cuda": 0, "sim": 1, "agree": False}]
    assert checked["summary"].startswith("2/3 sync rows agree")


def corpus(**outcomes):
    return {"outcomes": {f"tests.selftest.test_run::{name}": o for name, o in outcomes.items()}, "seconds": 30.0,
            "passed": sum(o == "passed" for o in outcomes.values()), "failed": sum(o == "failed" for o in
                                                                                  outcomes.values()),
            "skipped": sum(o == "skipped" for o in outcomes.values()), "failures": [], "messages": {}, "exit": 0}


def test_the_corpus_is_compared_test_by_test_on_the_gpu_and_the_simulator():
    sim = corpus(test_seed="passed", test_fixed="passed", test_book="skipped")
    same = doctor.same_verdicts(corpus(test_seed="passed", test_fixed="passed", test_book="skipped"), sim)
    assert same["differ"] == [] and same["summary"].startswith("3/3 of the corpus's tests give the same verdict")
    other = doctor.same_verdicts(corpus(test_seed="failed", test_fixed="passed", test_book="skipped"), sim)
    assert other["differ"] == ["tests.selftest.test_run::test_seed"] and other["summary"].startswith("2/3")


def test_kata_doctor_says_what_the_machine_has_and_runs_the_table(capsys):
    assert commands.main(["doctor"]) == 0
    out = capsys.readouterr().out
    marked = sum(bool(r.simulator) for r in ROWS)
    assert out.startswith("kata doctor: what this machine has\n  Python ")
    assert "Where the checks run:\n  the checks marked cuda (pytest exercises, kata.check): on " in out
    assert (f"  the simulated accelerator: {len(ROWS) - marked}/{len(ROWS)} behaviours as on CUDA; {marked} refused "
            "loudly by the simulator, as the table marks them") in out
    assert "cuda-marked checks (--full): pytest solutions -m cuda" in out
    assert "No CUDA here: the CUDA path stands on the simulator and the table's sources only." in out


def test_kata_doctor_full_writes_one_report_with_the_gpu_torch_and_python(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(machine, "survey", lambda: a_machine(cuda=GPU, driver="580.65"))
    cuda = table({r.id: 1 if r.kind == "syncs" else None for r in ROWS})
    sim = table({r.id: 1 if r.kind == "syncs" else None for r in ROWS})
    monkeypatch.setattr(doctor, "table_on", lambda kind, folder: {"cuda": cuda, "sim": sim}[kind])
    monkeypatch.setattr(doctor, "checks_on", lambda kind, folder: {"passed": 18, "failed": 0, "skipped": 0,
                                                                   "failures": [], "seconds": 20.0, "exit": 0})
    monkeypatch.setattr(doctor, "_bench", lambda folder: {"table": "device loop ...", "ratios": ["cuda: 2.00x"],
                                                          "rows": [], "seconds": 60.0})
    monkeypatch.setattr(doctor, "corpus_on", lambda kind, folder: corpus(test_seed="passed"))
    assert commands.main(["doctor", "--full", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Sync counts, the simulator against torch.cuda.set_sync_debug_mode: " in out
    assert "No CUDA here" not in out
    data = json.loads((tmp_path / report.JSON_NAME).read_text())
    assert data["full"] and set(data["conformance"]) == {"cuda", "sim"} and set(data["checks"]) == {"cuda", "sim"}
    text = (tmp_path / report.MARKDOWN_NAME).read_text()
    assert text.startswith(f"# kata doctor: {GPU}\n\n*For:* ") and f"\n\n{data['date']}, `kata doctor --full`" in text
    for line in ("- Python 3.12.3 on Linux x86_64", "- torch 2.11.0+cu128 (built for CUDA 12.8)",
                 f"- CUDA: {GPU}, NVIDIA driver 580.65", "## The checks marked cuda (`pytest solutions -m cuda`)",
                 "- real CUDA: 18 passed, 0 failed, 0 skipped (20 s)", "device loop ...",
                 "| `sync-item` | 1 | 1 | yes |", "## The corpus under `kata run`, on the GPU and on the simulator",
                 "1/1 of the corpus's tests give the same verdict on the GPU as on the simulator", "## Not run here",
                 "- nothing"):
        assert line in text, line


def test_a_failing_check_is_reported_with_its_message(monkeypatch, tmp_path, capsys):
    message = "AssertionError: train_epoch must synchronise the device with the host at most once per epoch"
    junit = ('<testsuites><testsuite><testcase classname="tests.test_sync" name="test_syncs"><failure message="'
             f'{message}&#10;  it synchronised 7 times">the traceback</failure></testcase>'
             '<testcase classname="tests.test_sync" name="test_other"/></testsuite></testsuites>')

    def child(command, timeout):   # pytest's run, as its junit file tells it
        path = next(a for a in command if a.startswith("--junitxml=")).split("=", 1)[1]
        (tmp_path / path).write_text(junit)
        return 1, "", 3.0

    monkeypatch.setattr(doctor, "_child", child)
    found = doctor.checks_on("cuda", tmp_path)
    assert (found["passed"], found["failed"], found["failures"]) == (1, 1, ["tests.test_sync::test_syncs"])
    monkeypatch.setattr(machine, "survey", lambda: a_machine(cuda=GPU, driver="580.65"))
    monkeypatch.setattr(doctor, "table_on", lambda kind, folder: table({}))
    monkeypatch.setattr(doctor, "checks_on", lambda kind, folder: found)
    monkeypatch.setattr(doctor, "_bench", lambda folder: {"not_run": "not here", "seconds": 0.0})
    monkeypatch.setattr(doctor, "corpus_on", lambda kind, folder: corpus(test_seed="passed"))
    assert commands.main(["doctor", "--full", "--out", str(tmp_path / "report")]) == 1
    assert f"    failed: tests.test_sync::test_syncs\n      {message}\n        it synchronised 7 times" in (
        capsys.readouterr().out)
    text = (tmp_path / "report" / report.MARKDOWN_NAME).read_text()
    assert f"  - failed: `tests.test_sync::test_syncs`\n    > {message}\n    >   it synchronised 7 times" in text


def test_a_row_that_differs_on_cuda_fails_the_doctor_and_is_reported(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(machine, "survey", lambda: a_machine(cuda=GPU))
    differs = table({"mix-cat": None})
    differs["outcomes"][0].update(status="differs", got="gave 1")
    differs["exit"] = 1
    monkeypatch.setattr(doctor, "table_on", lambda kind, folder: differs if kind == "cuda" else table({}))
    assert commands.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert ("    differs: mix-cat: gave 1\n      (CUDA: RuntimeError: Expected all tensors to be on the same "
            "device") in out


@pytest.mark.slow
def test_the_corpus_runs_on_the_simulator_as_kata_doctor_full_runs_it(tmp_path):
    # One of the corpus's tests (the project's run runs them all, in test_run.py), through the doctor's command line.
    found = doctor.corpus_on("sim", tmp_path, only="cpu_batch")
    assert (found["passed"], found["failed"]) == (1, 0), found
    assert list(found["outcomes"]) == ["tests.selftest.test_run::test_a_cpu_batch_into_a_gpu_model_says_so"]
    assert doctor.same_verdicts(found, found)["differ"] == []


@pytest.mark.slow
def test_kata_doctor_full_runs_here_and_says_what_it_could_not_run(tmp_path, capsys):
    assert commands.main(["doctor", "--full", "--out", str(tmp_path)]) == 0
    text = (tmp_path / report.MARKDOWN_NAME).read_text()
    assert "## The checks marked cuda (`pytest solutions -m cuda`)\n\n- the simulated accelerator: " in text
    assert " 0 failed, 0 skipped" in text
    assert "- kata bench GPU rows: no CUDA here: a GPU's timings need a GPU" in text
    assert "- sync cross-check: needs CUDA" in text
