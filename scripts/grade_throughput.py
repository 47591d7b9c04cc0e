"""How fast `kata grade` grades a class: seconds per correct submission per core.

    python scripts/grade_throughput.py                 # 8 copies of solutions/, --jobs = the cores
    python scripts/grade_throughput.py --submissions 20 --jobs 2

It grades N copies of the reference solutions twice into a fresh folder: the first run also
checks the reference solutions (kept in reference.json), the second reuses them, as a teacher's
second class would. For each it prints the wall-clock time, seconds per submission, and seconds
per submission per core (wall time x cores / N); and, for the scale of this machine, how long
`pytest solutions` takes here (the same checks, once, in one process).
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
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    folder = Path(tempfile.mkdtemp(prefix="kata-throughput-"))
    try:
        subs = []
        for i in range(args.submissions):
            shutil.copytree(ROOT / "solutions", folder / "subs" / f"copy-{i + 1}")
            subs.append(str(folder / "subs" / f"copy-{i + 1}"))
        grade = [sys.executable, "-m", "kata", "grade", *subs, "--out", str(folder / "out"), "--jobs",
                 str(args.jobs), "--quiet"]
        once = timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "solutions"])
        print(f"pytest solutions (one process, the import included): {once:.1f} s")
        for label in ("with the reference run", "reference reused"):
            seconds = timed(grade)
            print(f"kata grade, {args.submissions} correct submissions, --jobs {args.jobs}, {label}: {seconds:.1f} s "
                  f"= {seconds / args.submissions:.1f} s each = {seconds * cores / args.submissions:.1f} s per "
                  f"submission per core ({cores} cores)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
