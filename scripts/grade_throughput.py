"""How fast `kata grade` grades a class: seconds per correct submission per core.

    python scripts/grade_throughput.py                 # 8 copies of solutions/, --jobs = the cores
    python scripts/grade_throughput.py --submissions 20 --jobs 2

It grades N copies of the reference solutions twice into a fresh folder: the first run also
checks the reference solutions (kept in reference.json), the second reuses them, as a teacher's
second class would. For each it prints the wall-clock time, seconds per submission, and seconds
per submission per core (wall time x cores / N). Then it grades 2N copies, reusing the reference:
the difference from N copies is what one more submission costs, without the servers' start that
every run pays once (``--no-marginal`` leaves it out). For the scale of this machine, it also
prints how long `pytest solutions` takes here (the same checks, once, in one process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(argv[:4])} ... failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-marginal", action="store_true", help="skip the run of 2N copies")
    args = parser.parse_args()
    cores, n = os.cpu_count() or 1, args.submissions
    folder = Path(tempfile.mkdtemp(prefix="kata-throughput-"))
    try:
        subs = []
        for i in range(n if args.no_marginal else 2 * n):
            shutil.copytree(ROOT / "solutions", folder / "subs" / f"copy-{i + 1}")
            subs.append(str(folder / "subs" / f"copy-{i + 1}"))

        def grade(copies: list[str]) -> list[str]:
            return [sys.executable, "-m", "kata", "grade", *copies, "--out", str(folder / "out"), "--jobs",
                    str(args.jobs), "--quiet"]

        once = timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "solutions"])
        print(f"pytest solutions (one process, the import included): {once:.1f} s")
        for label in ("with the reference run", "reference reused"):
            seconds = timed(grade(subs[:n]))
            print(f"kata grade, {n} correct submissions, --jobs {args.jobs}, {label}: {seconds:.1f} s "
                  f"= {seconds / n:.1f} s each = {seconds * cores / n:.1f} s per submission per core ({cores} cores)")
        if not args.no_marginal:
            more = timed(grade(subs))
            print(f"kata grade, {2 * n} correct submissions, reference reused: {more:.1f} s; one more submission "
                  f"costs {(more - seconds) * cores / n:.1f} s per core (the servers' start left out)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
