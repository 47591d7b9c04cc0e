"""The speed targets (#26) held loosely: scripts/profile.py, against the baseline it recorded.

scripts/profile.py measures every figure of the targets; its output on a quiet 2-core machine,
written with ``--json``, is tests/selftest/profile-baseline.json. This check runs the profile's
pytest figures once (three exercises' runs and pytest solutions, no grading, kata watch on the first
exercise only) and holds each to its
baseline in CPU time over the import floor's CPU time, measured in the same run: a ratio that a
busy machine moves little, where a timed assert on wall time would flake. It fails on what undoes
the work, not on noise: a check run that costs half as much again as the baseline and its target
(a laptop made by a new interpreter again, the collector walking torch's objects again, a check
that draws a hundred figures) fails, with the figure, what it was and what to run.

To record the baseline again after a change that is meant to move it:

    python scripts/profile.py --json tests/selftest/profile-baseline.json
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kata.project import locate

ROOT = locate().root
BASELINE = Path(__file__).with_name("profile-baseline.json")
# How far past max(its target, its baseline) a ratio may go before it is a regression, not noise.
SLACK = 1.5
# A save's verdict in kata watch past the checks' own time may take this much longer than the target.
WATCH_SLACK = 2.0
# The exercises whose runs this check times (all of them would take CI 2.5 minutes): the stubs' failures
# (devices), the plotting checks' draws and the checkpoint's laptop, each of which had its own cost.
RUNS = ("devices", "plotting", "checkpoint")


def load_profile():
    """The profile's module (a script, not a package module)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("kata_profile_script", ROOT / "scripts" / "profile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_baseline_was_recorded_by_the_profile_and_within_its_targets():
    baseline = json.loads(BASELINE.read_text())
    profile = load_profile()
    stale = sorted(set(baseline["runs"]) - set(profile.runs_named()))
    assert not stale, (
        f"the baseline has runs the profile no longer makes ({stale}: an exercise renamed or removed?): record it "
        "again with `python scripts/profile.py --json tests/selftest/profile-baseline.json`")
    assert not baseline["missed"], f"the baseline was recorded with targets missed: {baseline['missed']}"
    for name in ("watch", "grade"):
        assert name in baseline, f"the baseline has no {name} figures: record it with the whole profile"


def test_each_exercise_has_its_figures_in_the_baseline():
    # A new exercise comes without them (recording takes the whole profile, 10 minutes): the run says so.
    missing = sorted(set(load_profile().runs_named()) - set(json.loads(BASELINE.read_text())["runs"]))
    if missing:
        pytest.skip(f"the profile's baseline has no figures for {', '.join(missing)}: record it again with "
                    "`python scripts/profile.py --json tests/selftest/profile-baseline.json`")


@pytest.mark.slow
def test_each_check_run_stays_near_its_baseline_in_cpu_time_over_the_floor(tmp_path):
    baseline = json.loads(BASELINE.read_text())
    profile = load_profile()
    out = tmp_path / "profile.json"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "profile.py"), "--repeat", "1", "--no-grade",
                           "--no-warmup", "--runs", ",".join(RUNS), "--watch", "devices", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"scripts/profile.py failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    now = json.loads(out.read_text())
    slower = []
    for name, measured in now["ratios"].items():
        target = profile.TARGETS["solutions" if name == "solutions" else "exercise"][0]
        was = baseline["ratios"][name]["cpu"]
        limit = SLACK * max(target, was)
        if measured["cpu"] > limit:
            slower.append(f"{name}: {measured['cpu']:.2f}x the floor's CPU time (baseline {was:.2f}x, "
                          f"target {target:.1f}x of wall time; the limit here {limit:.2f}x)")
    for kind in ("stub", "solution"):
        past = now["watch"][kind]["devices"] - now["checks"]["devices"][kind]
        limit = WATCH_SLACK * profile.TARGETS["watch"][0]
        if past > limit:
            slower.append(f"kata watch on the devices {kind}: a save's verdict took {past:.2f} s past the checks' "
                          f"own time (target {profile.TARGETS['watch'][0]:.1f} s; the limit here {limit:.1f} s)")
    assert not slower, ("these runs of the checks are much slower than the recorded baseline: "
                        "`python scripts/profile.py` shows where the time goes\n  " + "\n  ".join(slower)
                        + "\n" + done.stdout)
