"""``python -m kata.conformance --device {sim,cuda,mps}``: the table on one device.

Prints each row that does not hold (or every row with ``--all``) and the summary line;
``--json FILE`` writes every outcome.  Exit status 0 when no row differs silently from
CUDA, 1 otherwise, 2 when the device is not there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kata.i18n import _, pad, say

from .runner import load, run, summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kata.conformance",
                                     description=_("``python -m kata.conformance --device {sim,cuda,mps}``: the "
                                                   "table on one device."))
    parser.add_argument("--device", choices=("sim", "cuda", "mps"), default="sim")
    parser.add_argument("--json", metavar="FILE", help=_("write every outcome (and the timing) to FILE"))
    parser.add_argument("--all", action="store_true", help=_("print every row, not only those that do not hold"))
    args = parser.parse_args(argv)
    rows = load()
    start = time.perf_counter()
    try:
        outcomes = run(args.device, rows)
    except (RuntimeError, AssertionError) as err:  # no such device here, or the simulator can't install
        print(f"kata conformance: {args.device}: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - start
    by_id = {row.id: row for row in rows}
    for outcome in outcomes:
        if args.all or outcome.status != "holds":
            row = by_id[outcome.id]
            why = f" ({_(row.simulator['why'])})" if outcome.status == "refused" and row.simulator else ""
            print(f"  {pad(_(outcome.status), 8)} {outcome.id}: {outcome.got}{why}")
    line = summary(outcomes)
    print(say("{device}: {summary} ({seconds:.1f} s)", device=args.device, summary=line, seconds=seconds))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device, "summary": line, "seconds": seconds,
                                               "outcomes": [o.as_dict() for o in outcomes]}, indent=1))
    return 1 if any(o.status == "differs" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
