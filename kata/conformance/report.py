"""``kata doctor --full``'s report: one dict, written as JSON and as Markdown.

The Markdown of a run on a machine with CUDA is what the project commits as
``docs/gpu-report.md``: the date, the machine (GPU, torch, Python), the table on each
accelerator, the cuda-marked checks, the GPU rows of ``kata bench``, the sync
cross-check, the corpus under ``kata run`` on both, what could not run and why, and how
long each step took.
"""

from __future__ import annotations

import json
from pathlib import Path

from kata.i18n import N_, _, say

__all__ = ["JSON_NAME", "MARKDOWN_NAME", "markdown", "write"]

JSON_NAME, MARKDOWN_NAME = "doctor-report.json", "doctor-report.md"
_WHERE = {"cuda": N_("real CUDA"), "mps": N_("Apple MPS"), "sim": N_("the simulated accelerator")}


def _where(kind: str) -> str:
    return _(_WHERE[kind])


def _yes(flag) -> str:
    return _("yes") if flag else _("no")


def _timing(name: str) -> str:
    """A key of the report's timings (English, as kata doctor names them) in the kata's language."""
    for kind, where in _WHERE.items():
        if name == f"table on {where}":
            return say("table on {where}", where=_where(kind))
        if name == f"cuda-marked checks on {where}":
            return say("cuda-marked checks on {where}", where=_where(kind))
    return _(name) if name in (N_("kata bench GPU rows"), N_("the corpus under kata run"), N_("in all")) else name


def _machine(m: dict) -> list[str]:
    packages = ", ".join(f"{name} {version}" for name, version in m["packages"].items() if version)
    missing = ", ".join(name for name, version in m["packages"].items() if not version) or _("none")
    cuda = m["cuda"] or say("none ({why})", why=m["cuda_why_not"])
    return [
        say("- Python {python} on {platform}", python=m["python"], platform=m["platform"]),
        say("- torch {torch} (built for CUDA {cuda})", torch=m["torch"], cuda=m["torch_cuda"]) if m["torch_cuda"]
        else f"- torch {m['torch']}",
        f"- torchvision {m['torchvision']}",
        say("- CUDA: {cuda}, NVIDIA driver {driver}", cuda=cuda, driver=m["driver"]) if m.get("driver")
        else f"- CUDA: {cuda}",
        f"- MPS: {_yes(m['mps'])}",
        say("- simulated accelerator: {yes} ({why})", yes=_yes(m["simulator"]), why=m["simulator_why"]),
        say("- packages: {packages}", packages=packages),
        say("- missing: {missing}; bubblewrap (kata grade's sandbox): {yes}", missing=missing,
            yes=_yes(m["bubblewrap"])),
    ]


def _tables(tables: dict, rows: dict) -> list[str]:
    lines = []
    for kind, table in tables.items():
        if "not_run" in table:
            lines.append(say("- {where}: not run: {why}", where=_where(kind), why=table["not_run"]))
            continue
        lines.append(say("- {where}: **{summary}** ({seconds:.1f} s)", where=_where(kind), summary=table["summary"],
                         seconds=table["seconds"]))
        for outcome in table["outcomes"]:
            if outcome["status"] != "holds":
                row = rows.get(outcome["id"], {})
                lines.append(f"  - {_(outcome['status'])}: `{outcome['id']}`, {_(row.get('behaviour', ''))}: "
                             f"{outcome['got']}" + (f" (CUDA: {row['cuda']})" if outcome["status"] == "differs"
                                                    and row.get("cuda") else ""))
    return lines


def _checks(checks: dict) -> list[str]:
    lines = []
    for kind, result in checks.items():
        if "not_run" in result:
            lines.append(say("- {where}: not run: {why}", where=_where(kind), why=result["not_run"]))
            continue
        lines.append(say("- {where}: {passed} passed, {failed} failed, {skipped} skipped ({seconds:.0f} s)",
                         where=_where(kind), passed=result["passed"], failed=result["failed"],
                         skipped=result["skipped"], seconds=result["seconds"]))
        for name in result["failures"]:
            lines.append(say("  - failed: `{name}`", name=name))
            lines += [f"    > {line}" for line in result.get("messages", {}).get(name, "").splitlines()[:6]]
    return lines


def _cross_check(cross: dict) -> list[str]:
    if "not_run" in cross:
        return [say("Not run: {why}.", why=cross["not_run"])]
    lines = [_("| behaviour | CUDA's sync debug mode | the simulator | agree |"), "|---|---|---|---|"]
    lines += [f"| `{r['id']}` | {r['cuda']} | {r['sim']} | {_yes(True) if r['agree'] else '**' + _yes(False) + '**'} |"
              for r in cross["rows"]]
    return lines + ["", cross["summary"]]


def markdown(report: dict) -> str:
    m = report["machine"]
    title = f"kata doctor: {m['cuda']}" if m["cuda"] else _("kata doctor: no CUDA on this machine")
    command = f"`kata doctor{' --full' if report['full'] else ''}`"
    lines = [f"# {title}", "", _(
        "*For:* whoever wants to know how the kata fares on this machine, a GPU's above all. *After reading it* you "
        "know what ran where, which of the conformance table's CUDA behaviours held on each accelerator, how the "
        "checks marked cuda did, and what an epoch and a sync cost here."), "",
        say("{date}, {command}, {seconds:.0f} s in all.", date=report["date"], command=command,
            seconds=report["seconds"]), "", _("## The machine"), "", *_machine(m), "", _("## What ran where"), ""]
    lines += [f"- {_(s['name'])}: {s['why']}" for s in report["plan"]]
    lines += ["", _("## The conformance table"), "",
              say("`kata/conformance/table.toml`, {count} behaviours, each CUDA's, with its source.",
                  count=report["behaviours"]), "", *_tables(report["conformance"], report["rows"])]
    if report["full"]:
        lines += ["", _("## The checks marked cuda (`pytest solutions -m cuda`)"), "", *_checks(report["checks"])]
        bench = report["bench"]
        lines += ["", _("## kata bench: the GPU rows"), ""]
        lines += ([say("Not run: {why}.", why=bench["not_run"])] if "not_run" in bench
                  else ["```", bench["table"], "```", "", *bench["ratios"]])
        lines += ["", _("## The sync counter against torch.cuda.set_sync_debug_mode"), "",
                  *_cross_check(report["sync_cross_check"])]
        corpus = report.get("corpus", {"not_run": "-"})
        lines += ["", _("## The corpus under `kata run`, on the GPU and on the simulator"), ""]
        lines += ([say("Not run: {why}.", why=corpus["not_run"])] if "not_run" in corpus
                  else [corpus["summary"], "", *_checks(corpus["runs"]),
                        *[say("- differs: `{name}`", name=name) for name in corpus["differ"]]])
    lines += ["", _("## Not run here"), ""] + ([f"- {line}" for line in report["not_run"]] or [_("- nothing")])
    lines += ["", _("## Timings"), "", *[say("- {name}: {seconds:.1f} s", name=_timing(name), seconds=seconds)
                                         for name, seconds in report["timings"].items()]]
    return "\n".join(lines) + "\n"


def write(report: dict, folder: Path) -> tuple[Path, Path]:
    """Write the report as JSON and Markdown into `folder`; return both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / JSON_NAME, folder / MARKDOWN_NAME
    json_path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    md_path.write_text(markdown(report))
    return json_path, md_path
