"""``kata doctor``: what this machine has, and the devices held to CUDA's behaviour on it.

It says what the machine has (Python, torch, torchvision, CUDA, MPS, the simulated
accelerator, the packages the kata uses) and where each check will run and why,
then runs the conformance table (``kata/conformance/table.toml``) on every
accelerator present, each in a fresh process, and prints ``N/M behaviours as on
CUDA``.  ``--full`` also runs the checks marked cuda (``pytest solutions -m cuda``)
on each accelerator, the GPU rows of ``kata bench`` where there is CUDA,
compares the simulator's sync counts with ``torch.cuda.set_sync_debug_mode``'s,
runs the corpus's tests (``tests/selftest/test_run.py -m corpus``: real scripts
under ``kata run``) on the GPU and on the simulator, and writes one report,
Markdown and JSON, into ``--out``.  Run on a machine with
CUDA, the Markdown is ``docs/gpu-report.md``.

Exit status: 0 when every behaviour holds (or is refused as the table marks it) on
CUDA and on the simulator and every check that ran passed; 1 otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from kata.harness.tracebacks import display
from kata.i18n import N_, _, say
from kata.project import locate

__all__ = ["HELP", "add_parser", "checks_on", "corpus_on", "corpus_tests", "cross_check", "run", "same_verdicts",
           "table_on"]

HELP = N_("what this machine has, and the simulated accelerator held to CUDA here (--full: the GPU report)")
_WHERE = {"cuda": N_("real CUDA"), "mps": N_("Apple MPS"), "sim": N_("the simulated accelerator")}
_BENCH_GPU_ROWS = "cuda or jpeg_pipeline"  # the benchmarks that run on CUDA when there is one


def add_parser(sub):
    p = sub.add_parser("doctor", help=_(HELP), description=_(
        "It says what the machine has (Python, torch, torchvision, CUDA, MPS, the simulated accelerator, the "
        "packages the kata uses) and where each check will run and why, then runs the conformance table "
        "(``kata/conformance/table.toml``) on every accelerator present, each in a fresh process, and prints "
        "``N/M behaviours as on CUDA``. ``--full`` also runs the checks marked cuda (``pytest solutions -m cuda``) "
        "on each accelerator, the GPU rows of ``kata bench`` where there is CUDA, and compares the simulator's "
        "sync counts with ``torch.cuda.set_sync_debug_mode``'s, and writes one report, Markdown and JSON, into "
        "``--out``. Run on a machine with CUDA, the Markdown is ``docs/gpu-report.md``."))
    p.add_argument("--full", action="store_true",
                   help=_("also run the cuda-marked checks, the GPU rows of kata bench and the sync cross-check, "
                          "and write the report (a few minutes)"))
    p.add_argument("--out", default="doctor-report", metavar="DIR",
                   help=_("where --full writes doctor-report.md and doctor-report.json (default doctor-report/)"))
    return p


def _child(command: list[str], timeout: float, **more_env: str) -> tuple[int, str, float]:
    """Run a child process from the project's root: (exit status, its output, seconds)."""
    start = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg", **more_env}
    try:
        proc = subprocess.run(command, capture_output=True, text=True, cwd=locate().root, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        output = say("timed out after {seconds:.0f} s", seconds=timeout) + f"\n{err.stdout or ''}"
        return -1, output, time.perf_counter() - start
    return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - start


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else _("no output")


def table_on(kind: str, folder: Path) -> dict:
    """The conformance table on one accelerator, in a process of its own."""
    path = folder / f"conformance-{kind}.json"
    status, output, seconds = _child([sys.executable, "-m", "kata.conformance", "--device", kind, "--json", str(path)],
                                     timeout=600)
    if not path.is_file():
        return {"not_run": _last_line(output), "seconds": seconds}
    return {**json.loads(path.read_text()), "exit": status}


def checks_on(kind: str, folder: Path) -> dict:
    """``pytest solutions -m cuda --accelerator KIND``: how many passed, failed, were skipped."""
    return _pytest([str(locate().solutions), "-m", "cuda", "--accelerator", kind], folder / f"checks-{kind}.xml",
                   timeout=900)


def corpus_on(kind: str, folder: Path, only: str | None = None) -> dict:
    """The corpus's self-tests (tests/selftest/test_run.py, marked corpus; ``only``: those ``-k`` selects) with `kata
    run --device KIND`: real code nobody here wrote, run as a learner runs it, and the verdicts its tests expect (the
    line that fails, PyTorch's error, the lines that sync per batch)."""
    return _pytest([str(corpus_tests()), "--slow", "-m", "corpus", *(["-k", only] if only else [])],
                   folder / f"corpus-{kind}.xml", timeout=1800, KATA_RUN_DEVICE=kind)


def corpus_tests() -> Path:
    return locate().root / "tests" / "selftest" / "test_run.py"


def _pytest(args: list[str], junit: Path, timeout: float, **env: str) -> dict:
    """pytest ARGS in a process of its own: how many passed, failed, were skipped, and each outcome and failure."""
    status, output, seconds = _child([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-q", "-rs",
                                      f"--junitxml={junit}"], timeout=timeout, **env)
    if not junit.is_file():
        return {"not_run": say("pytest exited {status}: {last}", status=status, last=_last_line(output)),
                "seconds": seconds}
    root = ET.parse(junit).getroot()
    cases = list(root.iter("testcase"))
    messages, outcomes = {}, {}   # each failure's message, as pytest gave it in the junit file; each test's outcome
    for c in cases:
        name = f"{c.get('classname', '')}::{c.get('name', '')}"
        found = c.find("failure") if c.find("failure") is not None else c.find("error")
        if found is not None:
            messages[name] = (found.get("message") or found.text or "")
        outcomes[name] = "failed" if found is not None else "skipped" if c.find("skipped") is not None else "passed"
    skipped = sum(c.find("skipped") is not None for c in cases)
    return {"passed": len(cases) - len(messages) - skipped, "failed": len(messages), "skipped": skipped,
            "failures": list(messages), "messages": messages, "outcomes": outcomes, "seconds": seconds,
            "exit": status}


def same_verdicts(cuda: dict, simulated: dict) -> dict:
    """The corpus's tests on the GPU and on the simulator: each outcome alike, and those that differ."""
    differ = sorted(name for name in set(cuda.get("outcomes", {})) | set(simulated.get("outcomes", {}))
                    if cuda.get("outcomes", {}).get(name) != simulated.get("outcomes", {}).get(name))
    ran = sum(outcome != "skipped" for outcome in cuda.get("outcomes", {}).values())
    return {"differ": differ, "summary": say("{same}/{total} of the corpus's tests give the same verdict on the GPU "
                                             "as on the simulator ({ran} ran; the rest are not in this copy)",
                                             same=len(cuda.get("outcomes", {})) - len(differ),
                                             total=len(cuda.get("outcomes", {})), ran=ran)}


def _bench(folder: Path) -> dict:
    from kata.commands import bench

    start = time.perf_counter()
    try:
        report, skipped = bench.run_benchmarks("solutions", folder / "bench", keyword=_BENCH_GPU_ROWS)
    except RuntimeError as err:
        return {"not_run": str(err).splitlines()[0], "seconds": time.perf_counter() - start}
    table = bench.rows(report)
    return {"table": bench.table_text(table, skipped), "ratios": bench.ratios(table), "rows": table,
            "seconds": time.perf_counter() - start}


def cross_check(rows, cuda: dict, simulated: dict) -> dict:
    """The table's sync rows, as CUDA's sync debug mode counted them and as the simulator did."""
    counts = [{o["id"]: o.get("syncs") for o in table.get("outcomes", [])} for table in (cuda, simulated)]
    compared = []
    for row in rows:
        if row.kind == "syncs" and counts[0].get(row.id) is not None and counts[1].get(row.id) is not None:
            c, s, want = counts[0][row.id], counts[1][row.id], row.expect["syncs"]
            agree = c == s if not isinstance(want, bool) else (c > 0) == (s > 0)
            compared.append({"id": row.id, "cuda": c, "sim": s, "agree": agree})
    agreeing = sum(r["agree"] for r in compared)
    return {"rows": compared, "summary": say("{agreeing}/{total} sync rows agree (exact counts where the table gives "
                                            "a count; sync or no sync where it says true or false)",
                                            agreeing=agreeing, total=len(compared))}


def _yes(flag) -> str:
    return _("yes") if flag else _("no")


def _print_machine(m, steps) -> None:
    print(_("kata doctor: what this machine has"))
    print(say("  Python {python} on {platform}; torch {torch}; torchvision {torchvision}", python=m.python,
              platform=m.platform, torch=m.torch, torchvision=m.torchvision))
    if not m.torch:
        print(_("  torch is not installed"))
    elif m.cuda:
        print(f"  CUDA: {m.cuda}")
    elif m.torch_cuda:
        print(say("  CUDA: none ({why}; this torch is built for CUDA {version})", why=m.cuda_why_not,
                  version=m.torch_cuda))
    else:
        print(say("  CUDA: none ({why})", why=m.cuda_why_not))
    print(say("  MPS: {mps}; simulated accelerator: {simulator} ({why})", mps=_yes(m.mps),
              simulator=_yes(m.simulator), why=m.simulator_why))
    from kata.conformance.machine import NEEDED, OPTIONAL

    for names, what in ((NEEDED, N_("  missing: {packages}")),
                        (OPTIONAL, N_("  missing (optional, for notebooks): {packages}"))):
        gone = m.missing(names)
        lines = [say("{name} (needed by {what})", name=name, what=_(stops)) for name, stops in names.values()
                 if name in gone]
        print(say(what, packages="; ".join(lines) if lines else _("none")))
    print(_("Where the checks run:"))
    for step in steps:
        print(f"  {_(step.name)}{' (--full)' if step.full else ''}: {step.why}")


def run(args) -> int:
    from kata.conformance import load, machine, report

    start = time.perf_counter()
    m = machine.survey()
    steps = machine.plan(m, locate().has_solutions, corpus_tests().is_file())
    _print_machine(m, steps)
    rows = load()
    where = {step.name: step.where for step in steps}
    timings: dict[str, float] = {}
    not_run = [f"{_(s.name)}: {s.why}" for s in steps if not s.where and (args.full or not s.full)]
    scratch = tempfile.TemporaryDirectory(prefix="kata-doctor-")
    folder = Path(args.out) if args.full else Path(scratch.name)
    folder.mkdir(parents=True, exist_ok=True)
    print(say("The conformance table ({count} behaviours, each CUDA's, with its source):", count=len(rows)))
    tables = {}
    for kind in where["conformance table"]:
        tables[kind] = table_on(kind, folder)
        timings[f"table on {_WHERE[kind]}"] = tables[kind]["seconds"]
        _print_table(kind, tables[kind], rows)
    failed = any(t.get("exit", 1) != 0 for k, t in tables.items() if k != "mps")
    data = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "full": args.full, "machine": m.as_dict(),
            "plan": [vars(s) for s in steps if args.full or not s.full], "behaviours": len(rows),
            "rows": {r.id: {"behaviour": r.behaviour, "cuda": r.cuda} for r in rows}, "conformance": tables}
    if args.full:
        data["checks"] = {}
        for kind in where["cuda-marked checks"]:
            print(say("The checks marked cuda on {where} ...", where=_(_WHERE[kind])), flush=True)
            result = data["checks"][kind] = checks_on(kind, folder)
            timings[f"cuda-marked checks on {_WHERE[kind]}"] = result["seconds"]
            failed |= bool(result.get("failed")) or "not_run" in result
            print("  " + (result["not_run"] if "not_run" in result else
                          say("{passed} passed, {failed} failed, {skipped} skipped", passed=result["passed"],
                              failed=result["failed"], skipped=result["skipped"])))
            for name, message in result.get("messages", {}).items():
                print(say("    failed: {name}", name=name))
                print("\n".join(f"      {line}" for line in message.splitlines()[:6]))
        data["bench"] = {"not_run": _why(steps, "kata bench GPU rows")}
        if where["kata bench GPU rows"]:
            print(_("kata bench, the GPU rows ..."), flush=True)
            data["bench"] = _bench(folder)
            timings["kata bench GPU rows"] = data["bench"]["seconds"]
            print(data["bench"].get("table", data["bench"].get("not_run")))
        data["sync_cross_check"] = {"not_run": _why(steps, "sync cross-check")}
        if where["sync cross-check"] and "cuda" in tables and "sim" in tables:
            data["sync_cross_check"] = cross_check(rows, tables["cuda"], tables["sim"])
            print(say("Sync counts, the simulator against torch.cuda.set_sync_debug_mode: {summary}",
                      summary=data["sync_cross_check"]["summary"]))
        data["corpus"] = {"not_run": _why(steps, "the corpus under kata run")}
        if where["the corpus under kata run"]:
            print(_("The corpus under kata run, on the GPU and on the simulator ..."), flush=True)
            runs = {kind: corpus_on(kind, folder) for kind in where["the corpus under kata run"]}
            data["corpus"] = {"runs": runs, **same_verdicts(runs["cuda"], runs["sim"])}
            timings["the corpus under kata run"] = sum(r["seconds"] for r in runs.values())
            failed |= bool(data["corpus"]["differ"]) or any("not_run" in r or r.get("failed") for r in runs.values())
            print("  " + data["corpus"]["summary"])
            for kind, result in runs.items():
                for name, message in result.get("messages", {}).items():
                    print(say("    failed on {where}: {name}", where=_(_WHERE[kind]), name=name))
                    print("\n".join(f"      {line}" for line in message.splitlines()[:6]))
    timings["in all"] = time.perf_counter() - start
    data.update(not_run=not_run, timings=timings, seconds=timings["in all"])
    if args.full:
        json_path, md_path = report.write(data, folder)
        print(say("wrote {markdown} and {json}", markdown=display(md_path), json=display(json_path)))
    if not m.cuda:
        print(_("No CUDA here: the CUDA path stands on the simulator and the table's sources only. On a machine "
                "with CUDA, `kata doctor --full` is the GPU report (docs/gpu.md)."))
    scratch.cleanup()
    return 1 if failed else 0


def _why(steps, name: str) -> str:
    return next(s.why for s in steps if s.name == name)


def _print_table(kind: str, table: dict, rows) -> None:
    if "not_run" in table:
        print(say("  {where}: not run: {why}", where=_(_WHERE[kind]), why=table["not_run"]))
        return
    by_id = {r.id: r for r in rows}
    print(say("  {where}: {summary} ({seconds:.0f} s)", where=_(_WHERE[kind]), summary=table["summary"],
              seconds=table["seconds"]))
    for outcome in table["outcomes"]:
        if outcome["status"] != "holds":
            row = by_id[outcome["id"]]
            why = _(row.simulator["why"]) if outcome["status"] == "refused" and row.simulator else f"CUDA: {row.cuda}"
            got = outcome["got"] if len(outcome["got"]) <= 150 else outcome["got"][:147] + "..."
            print(f"    {_(outcome['status'])}: {outcome['id']}: {got}\n      ({why})")
