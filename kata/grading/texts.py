"""The grader's longer sentences, marked for translation, for ``kata grade`` and ``kata gradescope``. Pairs are
(one, more than one)."""

from __future__ import annotations

from kata.i18n import N_

__all__: list[str] = []

# --- the header of a run: the protections in force (kata/grading/sandbox.py) -------------------------------

GRADES = N_("each check runs in the grader's own process on the answers the submission's functions gave to its "
            "records, on inputs drawn for each hand-in, and on what its source declares, read outside its process; "
            "the checks of constants, shapes, properties and behaviour rest on what the graded process reports "
            "(listed in summary.json; see docs/teaching.md)")
SANDBOX = {
    "bubblewrap": N_("bubblewrap: no network; its own PID, IPC and UTS namespaces; the system, Python and the kata "
                     "read-only; no reference solutions, no grades, no homes, no other submission; its own folder, "
                     "/tmp and /dev/shm ({disk:,} MB); no checks or their helpers"),
    "user": N_("no bubblewrap: the machine's file system and network are the graded code's to read and reach, as far "
               "as its user may; its own folder; no reference solutions only if they are readable by root alone"),
    "none": N_("none (--no-sandbox): the graded code runs as you, reads what you can read (the reference solutions "
               "too, so a submission can copy their answers), reaches the network and writes wherever you can. Grade "
               "only code you trust this way"),
}
USER = {
    "root": N_("the root user of a user namespace of its own (no capabilities)"),
    "bubblewrap": N_("your user, in a user namespace of its own (no capabilities)"),
    "user": N_("an unprivileged user of its own (uids from {uids})"),
    "none": N_("your own user"),
}
COUNT = (N_("{memory:,} MB for all of a submission's processes together (watched by the grader)"),
         N_("cgroup {cgroups}: {memory:,} MB and {processes} processes for all of a submission's processes together"))
LIMITS = N_("{count}; per process (prlimit): memory, CPU time, file size, no core files; {limits}")
DESCRIBE = (N_("{test_timeout:g} s per check, {timeout:g} s per submission, {memory:,} MB of memory, {processes} "
               "processes, {disk:,} MB of disk"),
            N_("{test_timeout:g} s per check, {timeout:g} s per submission, {memory:,} MB of memory, {processes} "
               "processes, {disk:,} MB of disk, slow checks included"))
NO_BWRAP = N_("bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
NEEDS_BWRAP = N_("as an ordinary user the grader needs bubblewrap (with user namespaces) to keep a submission from "
                 "your files: install it, or grade with --no-sandbox (trusted code only)")
NO_PYTHON = N_("without bubblewrap the graded code runs as an unprivileged user ({uids} on), who can't start the "
               "kata's Python here ({why}): install bubblewrap, make Python and the kata readable by other users, or "
               "grade with --no-sandbox (trusted code only)")
READABLE = N_("the reference solutions ({solutions}) are readable by other users, so by the graded code: chmod -R "
              "go-rwx {solutions}")

# --- a run's end (kata/grading/batch.py) and a submission's status (kata/grading/scoring.py) ----------------

GRADED = (N_("kata grade: {n} submission in {seconds:.1f} s ({each:.1f} s each with --jobs {jobs}); {limits}"),
          N_("kata grade: {n} submissions in {seconds:.1f} s ({each:.1f} s each with --jobs {jobs}); {limits}"))
REVIEW_SOURCE = N_("{unresolved} (the source does not fix it: check it by hand)")
IMPORT = (N_("{modules} fails to import"), N_("{modules} fail to import"))
TIMED_OUT = (N_("timed out: {n} check did not run"), N_("timed out: {n} checks did not run"))
REVIEW = (N_("review: {note}"), N_("review: {note} (and {more} more: see the log)"))
QUIET = (N_("did not finish this check within its time limit ({s:g} s), and was ended"),
         N_("did not finish this record within its time limit ({s:g} s), and was ended"))

# --- what a student reads (kata/grading/reports.py) -------------------------------------------------------

OBSERVED = N_("Some of these checks' points rest on what your code's own process reported (what no answer shows, or "
              "what any code could answer without the work): {observed}.")
FAILED = N_("The autograder failed before it could grade this submission (exit status $status).")
TELL = N_("Tell your teacher: resubmitting will not help until it is fixed.")

# --- the README of the Gradescope autograder (kata/grading/gradescope.py): __NAMES__ are filled in ------------

README = N_("""A Gradescope autograder for device-kata, written by `kata gradescope`.

Upload this zip as the assignment's autograder ("Zip file upload"); choose an
Ubuntu 22.04 or newer base image and a container of at least __CONTAINER__ MB of
memory: a submission's processes together get at most __MEMORY__ MB (--memory),
the rest is the grader's. setup.sh installs the kata (and bubblewrap) and checks
the reference solutions once; run_autograder grades each submission with the
bundle's own `kata grade`, as an unprivileged user, and writes
/autograder/results/results.json. Students submit their exercises/ folder (or
its .py files, one per exercise, or a zip of either).

Grading options baked in: __OPTIONS__
""")

