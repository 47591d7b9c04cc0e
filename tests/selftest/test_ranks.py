"""Ranks spawned where there is no fork (kata.records.ranks; ``KATA_RANKS=spawn`` asks for them on Linux too).

A laptop (``python -m kata.records.elsewhere JOB``) runs a small records job here: its ``on_ranks`` calls start
two new interpreters, each running the job again as its rank. They must give what forked ranks give: every
rank's answer, in rank order, across two calls of one job (the same two processes); a rank's own error with its
line; and a collective one rank skips as "rank N hung at <line>". tests/selftest/test_known_wrong.py's
distributed mistakes read the same with spawned ranks (``KATA_RANKS=spawn pytest tests/selftest/test_known_wrong.py
-k distributed``: 29 passed on 2026-12-05, as forked); here, the checks pass on the reference with spawned ranks.
"""

import json
import os
import subprocess
import sys

import pytest
import torch

from kata.project import locate

JOB = '''
import os

from kata.records.ranks import RankFailed, as_data, on_ranks


def asked(target, how):
    learner = target.load("learner")
    work = getattr(learner, how)
    try:
        first = on_ranks(work, learner)
        second = on_ranks(work, learner) if how == "who" else None   # the job's second call: the same ranks
    except RankFailed as exc:
        return {"error": as_data(exc)}
    return {"first": first, "second": second, "laptop": os.getpid()}
'''

LEARNER = '''
import os
import sys

import torch
import torch.distributed as dist


def who(rank, world):
    total = torch.tensor([rank + 1.0])
    dist.all_reduce(total)
    return {"rank": rank, "world": world, "sum": total.item(), "pid": os.getpid(),
            "main": sys.modules["__main__"].__spec__.name}


def skips(rank, world):
    if rank == 0:
        dist.barrier()
    return rank


def raises(rank, world):
    if rank == 1:
        raise ValueError("rank one's own mistake")
    return rank
'''


def laptop(tmp_path, how) -> dict:
    """The job ``asked(target, how)`` in a laptop, its ranks spawned: what it returned."""
    (tmp_path / "learner.py").write_text(LEARNER)
    (tmp_path / "job_records.py").write_text(JOB)
    job = tmp_path / f"{how}.json"
    job.write_text(json.dumps({"records": str(tmp_path / "job_records.py"), "function": "asked",
                               "folder": str(tmp_path), "args": {"how": how}, "result": str(tmp_path / "found.pt")}))
    env = {**os.environ, "PYTHONPATH": str(locate().root), "KATA_RANKS": "spawn", "KATA_LANG": "en"}
    done = subprocess.run([sys.executable, "-m", "kata.records.elsewhere", str(job)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return torch.load(tmp_path / "found.pt", weights_only=True)


@pytest.mark.slow
def test_spawned_ranks_answer_in_rank_order_and_serve_a_jobs_every_call(tmp_path):
    found = laptop(tmp_path, "who")
    first, second = found["first"], found["second"]
    assert [one["rank"] for one in first] == [0, 1] and {one["world"] for one in first} == {2}
    assert {one["sum"] for one in first} == {3.0}   # a real all_reduce across the two
    assert {one["main"] for one in first} == {"kata.records.ranks"}   # new interpreters, not forks of the laptop
    pids = [one["pid"] for one in first]
    assert len(set(pids)) == 2 and found["laptop"] not in pids
    assert [one["pid"] for one in second] == pids   # the job's second call: the same two processes


@pytest.mark.slow
def test_a_ranks_error_and_a_skipped_collective_read_as_with_forked_ranks(tmp_path):
    error = laptop(tmp_path, "raises")["error"]
    assert (error["rank"], error["kind"], error["text"]) == (1, "ValueError", "rank one's own mistake")
    assert error["raised_at"][0].endswith("learner.py") and "raise ValueError" in error["raised_at"][3]
    hung = laptop(tmp_path, "skips")["error"]
    assert hung["kind"] == "RankHung", hung
    line = LEARNER.splitlines().index("        dist.barrier()") + 1
    assert hung["said"].startswith(f"rank 0 hung at learner.py, line {line}: dist.barrier() (waited 4 s); rank 1 "
                                   "had returned"), hung["said"]


@pytest.mark.slow
def test_the_distributed_checks_pass_on_spawned_ranks():
    env = {**os.environ, "KATA_RANKS": "spawn", "KATA_LANG": "en"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA",
                           "solutions/distributed.py"], env=env, cwd=locate().root, capture_output=True, text=True,
                          timeout=300)
    outcomes = [line for line in done.stdout.splitlines() if line.startswith(("PASSED", "FAILED", "ERROR"))]
    assert outcomes and all(line.startswith("PASSED") for line in outcomes), done.stdout[-3000:]
