"""The `kata` command (run in-process through kata.cli.main)."""

import pytest

from kata import cli
from kata.celeba import CelebA
from kata.target import CONTRACT


def test_kata_list_shows_the_exercises_in_order(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    positions = [out.index(f". {name} ") for name in CONTRACT]
    assert positions == sorted(positions)
    assert "pytest exercises" in out


def test_kata_hint_prints_the_hint_and_refuses_unknown_names(capsys):
    assert cli.main(["hint", "data"]) == 0
    assert "Smiling" in capsys.readouterr().out
    assert cli.main(["hint", "nonsense"]) == 2
    assert "devices, data, model" in capsys.readouterr().err


def test_kata_data_draws_a_set_that_loads(tmp_path, capsys):
    root = tmp_path / "d"
    assert cli.main(["data", "--root", str(root), "--train", "6", "--valid", "2", "--test", "2",
                     "--workers", "1"]) == 0
    assert "10 images" in capsys.readouterr().out
    assert [len(CelebA(root, split=s)) for s in ("train", "valid", "test")] == [6, 2, 2]


def test_kata_data_uses_KATA_DATA_by_default(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KATA_DATA", str(tmp_path / "cache"))
    assert cli.main(["data", "--train", "2", "--valid", "1", "--test", "1", "--workers", "1"]) == 0
    assert (tmp_path / "cache" / "celeba" / "list_attr_celeba.txt").is_file()


@pytest.mark.parametrize("bad", [["--train", "-5"], ["--valid", "many"]])
def test_kata_data_rejects_bad_counts(bad, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["data", *bad])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "negative" in err or "whole number" in err
