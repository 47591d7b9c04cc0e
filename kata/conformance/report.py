"""``kata doctor --full``'s report: one dict, written as JSON and as Markdown.

The Markdown of a run on a machine with CUDA is what the project commits as
``docs/gpu-report.md``: the date, the machine (GPU, torch, Python), the table on each
accelerator, the cuda-marked checks, the GPU rows of ``kata bench``, the sync
cross-check, what could not run and why, and how long each step took.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["JSON_NAME", "MARKDOWN_NAME", "markdown", "write"]

JSON_NAME, MARKDOWN_NAME = "doctor-report.json", "doctor-report.md"
_WHERE = {"cuda": "real CUDA", "mps": "Apple MPS", "sim": "the simulated accelerator"}


def _machine(m: dict) -> list[str]:
    packages = ", ".join(f"{name} {version}" for name, version in m["packages"].items() if version)
    missing = ", ".join(name for name, version in m["packages"].items() if not version) or "none"
    return [
        f"- Python {m['python']} on {m['platform']}",
        f"- torch {m['torch']} (built for CUDA {m['torch_cuda']})" if m["torch_cuda"] else f"- torch {m['torch']}",
        f"- torchvision {m['torchvision']}",
        f"- CUDA: {m['cuda'] or 'none (' + m['cuda_why_not'] + ')'}"
        + (f", NVIDIA driver {m['driver']}" if m.get("driver") else ""),
        f"- MPS: {'yes' if m['mps'] else 'no'}",
        f"- simulated accelerator: {'yes' if m['simulator'] else 'no'} ({m['simulator_why']})",
        f"- packages: {packages}",
        f"- missing: {missing}; bubblewrap (kata grade's sandbox): {'yes' if m['bubblewrap'] else 'no'}",
    ]


def _tables(tables: dict, rows: dict) -> list[str]:
    lines = []
    for kind, table in tables.items():
        if "not_run" in table:
            lines.append(f"- {_WHERE[kind]}: not run: {table['not_run']}")
            continue
        lines.append(f"- {_WHERE[kind]}: **{table['summary']}** ({table['seconds']:.1f} s)")
        for outcome in table["outcomes"]:
            if outcome["status"] != "holds":
                row = rows.get(outcome["id"], {})
                lines.append(f"  - {outcome['status']}: `{outcome['id']}`, {row.get('behaviour', '')}: "
                             f"{outcome['got']}" + (f" (CUDA: {row['cuda']})" if outcome["status"] == "differs"
                                                    and row.get("cuda") else ""))
    return lines


def _checks(checks: dict) -> list[str]:
    lines = []
    for kind, result in checks.items():
        if "not_run" in result:
            lines.append(f"- {_WHERE[kind]}: not run: {result['not_run']}")
            continue
        lines.append(f"- {_WHERE[kind]}: {result['passed']} passed, {result['failed']} failed, {result['skipped']} "
                     f"skipped ({result['seconds']:.0f} s)")
        lines += [f"  - failed: `{name}`" for name in result["failures"]]
    return lines


def _cross_check(cross: dict) -> list[str]:
    if "not_run" in cross:
        return [f"Not run: {cross['not_run']}."]
    lines = ["| behaviour | CUDA's sync debug mode | the simulator | agree |", "|---|---|---|---|"]
    lines += [f"| `{r['id']}` | {r['cuda']} | {r['sim']} | {'yes' if r['agree'] else '**no**'} |"
              for r in cross["rows"]]
    return lines + ["", cross["summary"]]


def markdown(report: dict) -> str:
    m = report["machine"]
    title = f"kata doctor: {m['cuda']}" if m["cuda"] else "kata doctor: no CUDA on this machine"
    lines = [f"# {title}", "", f"{report['date']}, `kata doctor{' --full' if report['full'] else ''}`, "
             f"{report['seconds']:.0f} s in all.", "", "## The machine", "", *_machine(m), "",
             "## What ran where", ""]
    lines += [f"- {s['name']}: {s['why']}" for s in report["plan"]]
    lines += ["", "## The conformance table", "", f"`kata/conformance/table.toml`, {report['behaviours']} "
              "behaviours, each CUDA's, with its source.", "", *_tables(report["conformance"], report["rows"])]
    if report["full"]:
        lines += ["", "## The checks marked cuda (`pytest solutions -m cuda`)", "", *_checks(report["checks"])]
        bench = report["bench"]
        lines += ["", "## kata bench: the GPU rows", ""]
        lines += ([f"Not run: {bench['not_run']}."] if "not_run" in bench
                  else ["```", bench["table"], "```", "", *bench["ratios"]])
        lines += ["", "## The sync counter against torch.cuda.set_sync_debug_mode", "",
                  *_cross_check(report["sync_cross_check"])]
    lines += ["", "## Not run here", ""] + ([f"- {line}" for line in report["not_run"]] or ["- nothing"])
    lines += ["", "## Timings", "", *[f"- {name}: {seconds:.1f} s" for name, seconds in report["timings"].items()]]
    return "\n".join(lines) + "\n"


def write(report: dict, folder: Path) -> tuple[Path, Path]:
    """Write the report as JSON and Markdown into `folder`; return both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / JSON_NAME, folder / MARKDOWN_NAME
    json_path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    md_path.write_text(markdown(report))
    return json_path, md_path
