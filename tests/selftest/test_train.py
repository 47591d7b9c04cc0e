"""`kata train`: the main job, end to end on small sizes."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from PIL import Image

from kata import cli
from kata.target import PROJECT_ROOT
from kata.train import KataUserError, Settings, run

SMALL = dict(n_train=16, n_valid=8, n_test=8, epochs=2, batch_size=8, device="cpu")


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KATA_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def test_a_run_writes_history_png_and_json_and_reports_test_accuracy(tmp_path, data_home, capsys):
    record = run(Settings(**SMALL, out=str(tmp_path / "run")))
    out = capsys.readouterr().out
    saved = json.loads((tmp_path / "run" / "history.json").read_text())
    assert saved == json.loads(json.dumps(record))
    for name in ("loss_hist_train", "loss_hist_valid", "accuracy_hist_train", "accuracy_hist_valid"):
        assert len(saved["history"][name]) == 2 and all(type(v) is float for v in saved["history"][name])
    assert 0.0 <= saved["test"]["accuracy"] <= 1.0
    assert saved["device"] == "cpu" and saved["data"]["synthetic"] is True
    assert saved["data"]["n_train"] == 16 and len(saved["epoch_seconds"]) == 2
    with Image.open(tmp_path / "run" / "history.png") as png:
        assert png.format == "PNG" and png.width > 300
    assert "test accuracy" in out and "epoch  2/2" in out and "--book" in out
    assert any(data_home.glob("synthetic-16-8-8-seed0/celeba/KATA_SYNTHETIC.json")), "the set is cached"


def test_two_cpu_runs_give_the_same_histories(tmp_path, data_home):
    first = run(Settings(**SMALL, out=str(tmp_path / "a")), quiet=True)
    second = run(Settings(**SMALL, out=str(tmp_path / "b")), quiet=True)
    assert first["history"] == second["history"] and first["test"] == second["test"]


def test_a_stub_gets_a_message_not_a_traceback(tmp_path, data_home):
    with pytest.raises(KataUserError, match=r"exercises/data.py: `load_splits` is not written yet"):
        run(Settings(**SMALL, target="exercises", out=str(tmp_path / "run")), quiet=True)


def test_a_broken_implementation_names_the_file_and_line(tmp_path, data_home):
    mine = tmp_path / "mine"
    shutil.copytree(PROJECT_ROOT / "solutions", mine)
    source = (mine / "training.py").read_text()
    (mine / "training.py").write_text(source.replace("pred = model(x_batch)[:, 0]\n            loss = loss_fn",
                                                     "pred = model(x_batch)\n            loss = loss_fn", 1))
    with pytest.raises(KataUserError) as info:
        run(Settings(**SMALL, target=str(mine), out=str(tmp_path / "run")), quiet=True)
    assert "training.py, line" in str(info.value) and "pytest" in str(info.value)


def test_the_command_line_reports_errors_plainly(tmp_path, data_home, capsys):
    code = cli.main(["train", "--root", str(tmp_path / "nowhere"), "--out", str(tmp_path / "run")])
    assert code == 1
    err = capsys.readouterr().err
    assert "kata train: --root" in err and "celeba/" in err and "Traceback" not in err


@pytest.mark.slow
def test_kata_train_with_no_arguments_runs_end_to_end_from_a_fresh_folder(tmp_path):
    # No dataset anywhere: `kata train` draws its synthetic set into ./data first.
    env = {k: v for k, v in os.environ.items() if k not in ("KATA_DATA", "PYTEST_ADDOPTS")}
    run = subprocess.run([sys.executable, "-m", "kata.cli", "train"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    record = json.loads((folder / "history.json").read_text())
    assert (folder / "history.png").is_file()
    assert (tmp_path / "data").is_dir(), "the synthetic set is cached in ./data"
    valid = record["history"]["accuracy_hist_valid"][-1]
    assert valid >= 0.90, f"the quick run ends at {valid:.3f} validation accuracy; the synthetic set must be learnable"
    assert record["total_seconds"] <= 300, f"the quick run took {record['total_seconds']} s; it must fit in 300 s"
    assert "test accuracy" in run.stdout
