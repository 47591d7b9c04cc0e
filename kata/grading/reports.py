"""What ``kata grade`` writes: grades.csv, summary.json, results/ (Gradescope), feedback/, logs/.

Everything a student sees (feedback/NAME.md, results/NAME.json) is built from
what the sandbox could see: the checks' messages (with the submission's own
folder shortened to ``exercises/``), the curriculum's hints, and the flags.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
import textwrap
from pathlib import Path

from kata import curriculum
from kata.files import atomic_write, write_json
from kata.grading.results import Graded
from kata.grading.scoring import Scheme, Score, check_name, exercise_name, percent

__all__ = ["class_table", "feedback_markdown", "gradescope_results", "log_text", "write_outputs"]


def _fence(text: str) -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}text\n{text.rstrip()}\n{ticks}"


def _hint(ex: curriculum.Exercise) -> str:
    """The first level of each of the exercise's hints."""
    parts = []
    for topic, levels in ex.hints:
        if levels:
            parts.append((f"`{topic}`: " if topic else "") + levels[0].strip())
    return "\n\n".join(parts)


def feedback_markdown(graded: Graded, s: Score, scheme: Scheme) -> str:
    lines = [f"# device-kata: feedback for {graded.name}", "",
             f"**Score: {s.total:.2f} / {scheme.total:g} ({percent(s.total, scheme.total):.1f}%)**", ""]
    if s.flagged:
        lines += ["**Held for review by your teacher.** The grader found code that reaches past what these "
                  "exercises need (files, processes, the interpreter's insides, the checks' own code):", ""]
        lines += [f"- {flag}" for flag in graded.flags] + [""]
        if s.total == 0 and s.earned_total > 0:
            lines += [f"Until the review, it scores 0 (its checks earned {s.earned_total:.2f}).", ""]
    elif s.status != "ok":
        lines += [f"While grading: {s.status}.", ""]
    lines += ["| # | exercise | points | checks passed |", "|---|---|---|---|"]
    for ex in curriculum.exercises():
        if scheme.max[ex.name]:
            lines.append(f"| {ex.number} | {ex.name} | {s.exercises[ex.name]:.2f} / {scheme.max[ex.name]:g} | "
                         f"{s.passed[ex.name]} / {s.counted[ex.name]} |")
        else:
            lines.append(f"| {ex.number} | {ex.name} | not graded here | - |")
    lines.append("")
    for ex in curriculum.exercises():
        lines += _exercise_feedback(graded, s, scheme, ex)
    return "\n".join(lines).rstrip() + "\n"


def _exercise_feedback(graded: Graded, s: Score, scheme: Scheme, ex: curriculum.Exercise) -> list[str]:
    name = ex.name
    mine = [c for c in scheme.checks if exercise_name(c) == name]
    failing = [c for c in mine if scheme.weight[c] > 0 and graded.results.get(c, {}).get("outcome") != "passed"]
    free = [c for c in mine if scheme.weight[c] == 0]
    heading = f"## {ex.label}: {ex.title}"
    if not scheme.max[name]:
        return [heading, "", "Not graded here: none of its checks runs on this machine.", ""]
    if not failing and not free:
        return [heading, "", f"{s.exercises[name]:.2f} / {scheme.max[name]:g}: every check passes.", ""]
    lines = [heading, "", f"{s.exercises[name]:.2f} / {scheme.max[name]:g}: {s.passed[name]} of "
                          f"{s.counted[name]} checks pass."]
    if free:
        reasons = sorted({scheme.unweighted[c] for c in free})
        lines += ["", f"{len(free)} check{'s' if len(free) > 1 else ''} of this exercise carr"
                      f"{'y' if len(free) > 1 else 'ies'} no points here ({'; '.join(reasons)}); its "
                      f"{scheme.max[name]:g} points are shared among the other {s.counted[name]}."]
    if not failing:
        return lines + [""]
    lines += ["", f"Hint (`kata hint {name}`):", "", textwrap.indent(_hint(ex), "> ", lambda _: True), "",
              f"Run these checks on your own machine with `pytest exercises/{name}.py`.", ""]
    groups: dict[str, list[str]] = {}
    for c in failing:
        r = graded.results.get(c, {})
        groups.setdefault(r.get("message") or r.get("outcome", "failed"), []).append(c)
    for message, same in groups.items():
        if len(same) == 1:
            lines += [f"### {check_name(same[0])}", ""]
        else:
            names = ", ".join(f"`{check_name(c)}`" for c in same[:12])
            more = f" and {len(same) - 12} more" if len(same) > 12 else ""
            lines += [f"### {len(same)} checks, one message", "", f"{names}{more}:", ""]
        lines += [_fence(message), ""]
    return lines


def gradescope_results(graded: Graded, s: Score, scheme: Scheme, feedback: str) -> dict:
    """The submission in Gradescope's results.json format (Autograder Specifications): a top-level
    score (it overrides the tests' sum), one test per check with its weight as max_score, and the
    feedback as the top-level output."""
    tests = []
    zeroed = s.flagged and s.total == 0
    for ex in curriculum.exercises():
        for k, c in enumerate([c for c in scheme.checks if exercise_name(c) == ex.name], 1):
            r = graded.results.get(c, {})
            test = {"name": f"{ex.label}: {check_name(c)}", "number": f"{ex.number}.{k}",
                    "visibility": "visible", "tags": [ex.name]}
            w = scheme.weight[c]
            if w > 0:
                ok = r.get("outcome") == "passed" and not zeroed
                test.update(score=round(w, 4) if ok else 0.0, max_score=round(w, 4),
                            status="passed" if ok else "failed",
                            output="" if ok else ("held for review (see the feedback)" if zeroed else
                                                  r.get("message") or r.get("outcome", "failed")))
            else:
                test.update(score=0.0, max_score=0.0, output=f"carries no points: {scheme.unweighted[c]}")
            tests.append(test)
    return {"score": round(s.total, 2), "execution_time": round(graded.seconds),
            "output": feedback, "output_format": "md", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def _sandbox(report: dict | None) -> str:
    if not report:
        return "no report"
    return json.dumps({k: v for k, v in report.items() if k not in ("e", "n", "w")})


def log_text(graded: Graded, s: Score, protections: list[str], limits) -> str:
    head = [f"submission: {graded.name} ({graded.path})",
            f"modules taken: {', '.join(graded.found) or 'none'}",
            f"status: {s.status}",
            f"limits: {limits.describe()}",
            *[f"protection: {line}" for line in protections],
            f"in the test process: {_sandbox(graded.sandbox)}",
            *[f"flag: {flag}" for flag in graded.flags],
            f"seconds: {graded.seconds:.1f}", ""]
    return "\n".join(head) + graded.log


def class_table(scores: list[Score], scheme: Scheme) -> str:
    width = max([10] + [len(s.name) for s in scores])
    cols = curriculum.names()
    rows = [f"  {'submission':<{width}} " + " ".join(f"{n:>8}" for n in cols) + f" {'total':>7} {'%':>6}  status"]
    for s in scores:
        cells = " ".join(f"{s.exercises[n]:>8.2f}" for n in cols)
        status = s.status if len(s.status) <= 60 else s.status[:57] + "..."
        rows.append(f"  {s.name:<{width}} {cells} {s.total:>7.2f} {percent(s.total, scheme.total):>6.1f}  {status}")
    rows.append(f"  {'max':<{width}} " + " ".join(f"{scheme.max[n]:>8g}" for n in cols) + f" {scheme.total:>7g}")
    return "\n".join(rows)


def _grades_csv(scores: list[Score], scheme: Scheme) -> str:
    names = curriculum.names()
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission", *names, "total", "max", "percent", "status"])
    for s in scores:
        writer.writerow([s.name, *(f"{s.exercises[n]:.2f}" for n in names), f"{s.total:.2f}",
                         f"{scheme.total:g}", f"{percent(s.total, scheme.total):.1f}", s.status])
    return buffer.getvalue()


def write_outputs(out: Path, graded: list[Graded], scores: list[Score], scheme: Scheme, limits,
                  protections: list[str], reference: dict, extra: dict) -> None:
    """Write DIR's files: the folders results/, feedback/, logs/ are built aside and put in place whole,
    the files are written atomically."""
    names = curriculum.names()
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".kata-grade-", dir=out))
    try:
        for sub in ("results", "feedback", "logs"):
            (staging / sub).mkdir()
        for g, s in zip(graded, scores, strict=True):
            feedback = feedback_markdown(g, s, scheme)
            (staging / "feedback" / f"{g.name}.md").write_text(feedback)
            (staging / "results" / f"{g.name}.json").write_text(
                json.dumps(gradescope_results(g, s, scheme, feedback), indent=1) + "\n")
            (staging / "logs" / f"{g.name}.log").write_text(log_text(g, s, protections, limits))
        for name in ("results", "feedback", "logs"):
            target = out / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            os.replace(staging / name, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    summary = {
        "max": {n: scheme.max[n] for n in names},
        "submissions": {s.name: {"exercises": {n: round(s.exercises[n] + 0.0, 2) for n in names},
                                 "total": round(s.total + 0.0, 2), "percent": percent(s.total, scheme.total),
                                 "status": s.status, "flagged": s.flagged,
                                 "earned": {n: round((s.earned or s.exercises)[n] + 0.0, 2) for n in names}}
                        for s in scores},
        "total": scheme.total, "warnings": scheme.warnings, "limits": dict(vars(limits)),
        "protections": protections, **extra,
    }
    write_json(out / "summary.json", summary)
    write_json(out / "reference.json", reference, indent=1)
    atomic_write(out / "grades.csv", _grades_csv(scores, scheme))
