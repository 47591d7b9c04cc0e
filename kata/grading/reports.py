"""What ``kata grade`` writes: grades.csv, summary.json, results/ (Gradescope), feedback/, logs/. What a student
sees is built from what their code could see: the checks' messages and the curriculum's hints.
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
from kata.grading import texts
from kata.grading.runner import Graded, exercise_name
from kata.grading.scoring import Scheme, Score, percent
from kata.harness import outcomes
from kata.i18n import _, pad, say

__all__ = ["class_table", "feedback_markdown", "gradescope_results", "write_outputs"]


def feedback_markdown(graded: Graded, s: Score, scheme: Scheme) -> str:
    lines = [say("# device-kata: feedback for {name}", name=graded.name), "",
             say("**Score: {total:.2f} / {max:g} ({percent:.1f}%)**", total=s.total, max=scheme.total,
                 percent=percent(s.total, scheme.total)), ""]
    if s.status != "ok":
        lines += [say("While grading: {status}.", status=s.status), ""]
    lines += [_("| # | exercise | points | checks that count |"), "|---|---|---|---|"]
    for ex in curriculum.exercises():
        shown = f"{s.exercises[ex.name]:.2f} / {scheme.max[ex.name]:g} | {s.passed[ex.name]} / {s.counted[ex.name]}" \
            if scheme.max[ex.name] else _("not graded here | -")
        lines.append(f"| {ex.number} | {ex.name} | {shown} |")
    lines.append("")
    for ex in curriculum.exercises():
        lines += _exercise_feedback(graded, s, scheme, ex)
    return "\n".join(lines).rstrip() + "\n"


def _exercise_feedback(graded: Graded, s: Score, scheme: Scheme, ex: curriculum.Exercise) -> list[str]:
    mine = [c for c in scheme.checks if exercise_name(c) == ex.name]
    failing = [c for c in mine if scheme.weight[c] > 0 and graded.results.get(c, {}).get("outcome") != "passed"]
    heading = f"## {ex.label}: {_(ex.title)}"
    if not scheme.max[ex.name]:
        return [heading, "", _("Not graded here: none of its checks runs on this machine."), ""]
    lines = [heading, "", say("{earned:.2f} / {max:g}: {passed} of {counted} checks count.",
                              earned=s.exercises[ex.name], max=scheme.max[ex.name], passed=s.passed[ex.name],
                              counted=s.counted[ex.name])]
    observed = sorted({fact for c in mine if scheme.weight[c] > 0 for fact in scheme.on_the_process(c)})
    if observed:
        lines += ["", say(texts.OBSERVED, observed="; ".join(observed))]
    if not failing:
        return lines + [""]
    hint = "\n\n".join((f"`{topic}`: " if topic else "") + _(levels[0].strip()) for topic, levels in ex.hints if levels)
    lines += ["", say("Hint (`kata hint {name}`):", name=ex.name), "", textwrap.indent(hint, "> ", lambda _: True),
              "", say("Run these checks on your own machine with `pytest exercises/{name}.py`.", name=ex.name), ""]
    found = [outcomes.Record(c, ex.name, "todo" if (r := graded.results.get(c, {})).get("todo") else "failed",
                             r.get("cause"), r.get("message") or "") for c in failing]
    for block in outcomes.summarize(found).blocks:
        title = outcomes.check_name(block.checks[0]) if len(block.checks) == 1 else say("{n} checks, one cause",
                                                                                  n=len(block.checks))
        text = outcomes.render_block(block).rstrip()
        ticks = "````" if "```" in text else "```"   # a fence the message itself can't close
        lines += [f"### {title}", "", f"{ticks}text\n{text}\n{ticks}", ""]
    return lines


def gradescope_results(graded: Graded, s: Score, scheme: Scheme, feedback: str) -> dict:
    """Gradescope's results.json (Autograder Specifications): the score, one test per check, the feedback."""
    tests = []
    for ex in curriculum.exercises():
        for k, c in enumerate([c for c in scheme.checks if exercise_name(c) == ex.name], 1):
            r, w = graded.results.get(c, {}), scheme.weight[c]
            test = {"name": f"{ex.label}: {outcomes.check_name(c)}", "number": f"{ex.number}.{k}",
                    "visibility": "visible", "tags": [ex.name]}
            if w > 0:
                ok = r.get("outcome") == "passed"
                output = "" if ok else r.get("message") or r.get("outcome", "failed")
                test.update(score=round(w, 4) if ok else 0.0, max_score=round(w, 4),
                            status="passed" if ok else "failed", output=output)
            else:
                test.update(score=0.0, max_score=0.0,
                            output=say("carries no points: {why}", why=scheme.unweighted.get(c, "")))
            tests.append(test)
    return {"score": round(s.total, 2), "execution_time": round(graded.seconds), "output": feedback,
            "output_format": "md", "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def class_table(scores: list[Score], scheme: Scheme) -> str:
    width = max([10] + [len(s.name) for s in scores])
    cols = curriculum.names()
    rows = ["  " + pad(_("submission"), width) + " " + " ".join(f"{n:>8}" for n in cols) + " "
            + pad(_("total"), 7, ">") + f" {'%':>6}  " + _("status")]
    for s in scores:
        status = s.status if len(s.status) <= 60 else s.status[:57] + "..."
        rows.append(f"  {s.name:<{width}} " + " ".join(f"{s.exercises[n]:>8.2f}" for n in cols)
                    + f" {s.total:>7.2f} {percent(s.total, scheme.total):>6.1f}  {status}")
    rows.append("  " + pad(_("max"), width) + " " + " ".join(f"{scheme.max[n]:>8g}" for n in cols)
                + f" {scheme.total:>7g}")
    return "\n".join(rows)


def write_outputs(out: Path, graded: list[Graded], scores: list[Score], scheme: Scheme, limits,
                  protections: list[str], extra: dict) -> None:
    """Write the run's files atomically: results/, feedback/ and logs/ are built aside and put in place whole."""
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".kata-grade-", dir=out))
    try:
        for sub in ("results", "feedback", "logs"):
            (staging / sub).mkdir()
        for g, s in zip(graded, scores, strict=True):
            try:
                feedback = feedback_markdown(g, s, scheme)
                results = json.dumps(gradescope_results(g, s, scheme, feedback), indent=1) + "\n"
                log = "\n".join([f"submission: {g.name} ({g.path})", f"modules taken: {', '.join(g.found) or 'none'}",
                                 f"status: {s.status}", f"limits: {limits.describe()}",
                                 *[f"protection: {p}" for p in protections], *[f"review: {n}" for n in g.notes],
                                 f"seconds: {g.seconds:.1f}", "", *g.log]) + "\n"
            except Exception as exc:  # noqa: BLE001 - what one hand-in's bytes did to a report is its row's alone
                feedback = log = say("The grader could not write this feedback: {kind}: {error}",
                                     kind=type(exc).__name__, error=str(exc)[:300]) + "\n"
                results = json.dumps({"score": round(s.total, 2), "output": feedback}) + "\n"
            (staging / "feedback" / f"{g.name}.md").write_text(feedback)
            (staging / "results" / f"{g.name}.json").write_text(results)
            (staging / "logs" / f"{g.name}.log").write_text(log)
        for name in ("results", "feedback", "logs"):   # what a previous run wrote there goes with the staging
            if os.path.lexists(out / name):
                os.replace(out / name, staging / f"previous-{name}")
            os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    names = curriculum.names()
    summary = {
        "max": {n: scheme.max[n] for n in names}, "total": scheme.total,
        "submissions": {s.name: {"exercises": {n: round(s.exercises[n] + 0.0, 2) for n in names},
                                 "total": round(s.total + 0.0, 2), "percent": percent(s.total, scheme.total),
                                 "status": s.status, "review": g.notes, "path": str(g.path)}
                        for g, s in zip(graded, scores)},
        "warnings": scheme.warnings, "limits": dict(vars(limits)), "protections": protections,
        "resting_on_the_process": {c: {"points": round(w, 4), "what": scheme.on_the_process(c)}
                                   for c, w in scheme.weight.items() if w > 0 and scheme.on_the_process(c)},
        "no_points": scheme.unweighted, **extra,
    }
    write_json(out / "summary.json", summary)
    grades = io.StringIO()
    writer = csv.writer(grades, lineterminator="\n")
    writer.writerow(["submission", *names, "total", "max", "percent", "status"])
    writer.writerows([s.name, *(f"{s.exercises[n]:.2f}" for n in names), f"{s.total:.2f}", f"{scheme.total:g}",
                      f"{percent(s.total, scheme.total):.1f}", s.status] for s in scores)
    atomic_write(out / "grades.csv", grades.getvalue())
