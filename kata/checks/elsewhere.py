"""A laptop: a fresh Python process without an accelerator, where a checkpoint saved on one is opened.

The checkpoint exercise's lesson happens on another machine than the one that
saved the file. :func:`open_elsewhere` starts that machine as a child process
(``python -m kata.checks.elsewhere JOB``), once for the checks that need it
(importing torch takes seconds): CUDA hidden (``CUDA_VISIBLE_DEVICES=""``),
the simulated accelerator never installed, so ``torch.load`` there meets what a
CPU-only machine meets. The child imports the learner's module from its folder
(kata/harness/target.py), tries PyTorch's own ``torch.load(file)`` and then the
learner's ``load_checkpoint`` for each call the job names, continues training
on the CPU after each, and writes what it found as a file of plain values and
CPU tensors (read back with ``weights_only=True``). It imports torch and the
kata's harness only: no torchvision, no checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kata.i18n import say

__all__ = ["TIMEOUT", "NotRun", "main", "open_elsewhere"]

TIMEOUT = 25.0   # seconds: the child imports torch (2 to 5 s) and trains a tiny model for a few batches


class NotRun(Exception):
    """The fresh process could not run (the machine, not the learner's code): the message says why."""


def open_elsewhere(job: dict, timeout: float = TIMEOUT) -> dict:
    """Run ``job`` in a fresh process without an accelerator; what it found (see :func:`main`).

    ``job``: ``folder`` (the learner's modules), ``module``, ``file`` (the checkpoint), ``seed`` (of the
    fresh model it loads into), ``batches`` (kata.checks.doubles.fixed_batches' arguments), ``epochs``
    (trained after each load) and ``calls`` ({label: the device argument, or None for none})."""
    import torch

    kata_root = str(Path(__file__).resolve().parents[2])
    with tempfile.TemporaryDirectory(prefix="kata-elsewhere-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "result.pt"
        job_file.write_text(json.dumps({**job, "result": str(result_file)}))
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "",
               "PYTHONPATH": os.pathsep.join([kata_root, *filter(None, [os.environ.get("PYTHONPATH")])])}
        env.pop("PYTEST_ADDOPTS", None)
        try:
            done = subprocess.run([sys.executable, "-m", "kata.checks.elsewhere", str(job_file)], env=env,
                                  capture_output=True, text=True, timeout=timeout, cwd=os.getcwd())
        except subprocess.TimeoutExpired:
            raise NotRun(say("the fresh process did not finish within {timeout:g} s", timeout=timeout)) from None
        except OSError as err:
            raise NotRun(say("a fresh Python process could not start here ({error})", error=err)) from None
        if done.returncode != 0 or not result_file.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise NotRun(say("the fresh process ended with exit status {status}: {tail}", status=done.returncode,
                             tail=" / ".join(tail)))
        return torch.load(result_file, weights_only=True, map_location="cpu")


# --- the child ------------------------------------------------------------------------------------


def _error(exc: BaseException, target) -> dict:
    place = target.place_of(exc)
    return {"type": type(exc).__name__, "message": str(exc)[:1500], "where": place.where if place else "",
            "source": place.source if place else "", "not_written": isinstance(exc, NotImplementedError)}


def _plain(value, depth: int = 0):
    """A returned value as plain data: its kind, and what it holds (tensors as CPU copies)."""
    import torch

    if depth > 4:
        return {"kind": "deep"}
    if type(value) in (int, float, bool, str, type(None)):
        return {"kind": type(value).__name__, "value": value}
    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "device": str(value.device), "grad": value.requires_grad,
                "value": value.detach().cpu().clone()}
    if isinstance(value, (list, tuple)):
        kind = "namedtuple" if hasattr(type(value), "_fields") else type(value).__name__
        return {"kind": kind, "items": [_plain(v, depth + 1) for v in value]}
    return {"kind": type(value).__name__, "value": repr(value)[:80]}


def _optimizer(optimizer) -> list:
    """Per parameter (in the optimizer's order): its device, and each of its state tensors' device and values."""
    found = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p, {})
            found.append({"param": str(p.device), "state": {
                name: {"device": str(t.device), "value": t.detach().cpu().clone()}
                for name, t in state.items() if hasattr(t, "device")}})
    return found


def _optimizer_state(optimizer) -> dict:
    """The optimizer's state_dict, its tensors copied to the CPU."""
    import torch

    saved = optimizer.state_dict()
    return {"state": {i: {k: v.detach().cpu().clone() if isinstance(v, torch.Tensor) else v for k, v in s.items()}
                      for i, s in saved["state"].items()}, "param_groups": saved["param_groups"]}


def _load(module, target, job: dict, device) -> dict:
    import torch

    from kata.checks.doubles import fixed_batches, tiny_model, train_batches

    model = tiny_model(job["seed"])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    try:
        kwargs = {} if device is None else {"device": device}
        returned = module.load_checkpoint(job["file"], model, optimizer, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the learner's error is what this machine found
        return {"error": _error(exc, target)}
    found = {"error": None, "returned": _plain(returned), "devices": [str(p.device) for p in model.parameters()],
             "state": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
             "optimizer": _optimizer(optimizer), "optimizer_state": _optimizer_state(optimizer), "step_error": None}
    try:
        place = next(model.parameters()).device
        train_batches(model, optimizer, fixed_batches(**job["batches"]), job["epochs"], device=place)
    except Exception as exc:  # noqa: BLE001 - the next step's error, for the check to explain
        found["step_error"] = _error(exc, target)
    found["after"] = [p.detach().cpu().clone() for p in model.parameters()]
    return found


def main(argv: list[str]) -> int:
    """The child: run the job in ``argv[0]``, write what it found to the job's ``result`` file."""
    job = json.loads(Path(argv[0]).read_text())
    import torch

    from kata.harness.target import Target

    found = {"cuda": torch.cuda.is_available(), "simulated": hasattr(torch, "simgpu"), "torch_load": "",
             "calls": {}}
    try:
        torch.load(job["file"])
    except Exception as exc:  # noqa: BLE001 - PyTorch's own error is the lesson
        found["torch_load"] = f"{type(exc).__name__}: {exc}"
    target = Target(job["folder"])
    module = target.load(job["module"])
    for label, device in job["calls"].items():
        found["calls"][label] = _load(module, target, job, device)
    torch.save(found, job["result"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
