"""The kata's own pytest settings, applied to every run of its checks, whatever the rootdir.

``pytest PATH`` for a folder outside the project takes PATH's rootdir, where
the project's pyproject.toml is not read; so the settings a check run relies on
are set here, by the plugin, unless the command line (or an ini file) set them:

- a time limit per check (pytest-timeout): 60 s in a learner's run, where a
  check takes a few seconds and more means ``plt.pause`` or an endless loop;
  300 s for the project's own run;
- ``-rs``: every skipped check says why (a check that needs a GPU never skips
  in silence); in a learner's run, no list of failed checks' names after the
  failures (the table counts them, and each failure was shown);
- the warning filters;
- in a learner's run, Hypothesis without the advice a learner can't follow
  (``@reproduce_failure`` blobs, "explain" lines) and without shrinking (the
  messages describe the failing input; shrinking it costs a plotting check
  seconds per failure: measured 14.8 s against 6.3 s for a plotting module that
  converts only the loss lists); no shrinking either for the stubs in the
  project's own run (``hypothesis_for_the_call``);
- in a learner's run, a header without the settings of pytest-benchmark and
  pytest-timeout.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

__all__ = ["CHECK_TIMEOUT", "HYPOTHESIS_SETTINGS", "PROJECT_TIMEOUT", "apply", "hypothesis_for_the_call",
           "learner_header"]

CHECK_TIMEOUT = 60      # seconds per check in a learner's run
PROJECT_TIMEOUT = 300   # seconds per test in the project's own run
# Where @given keeps the settings a test runs with (bound when its module is imported).
HYPOTHESIS_SETTINGS = "_hypothesis_internal_use_settings"
WARNING_FILTERS = ("ignore::DeprecationWarning:torchvision.*",)


def _timeout_given(config: pytest.Config) -> bool:
    if config.getoption("timeout", None) is not None or os.environ.get("PYTEST_TIMEOUT"):
        return True
    try:
        return bool(config.getini("timeout"))
    except ValueError:  # pytest-timeout is not installed
        return True


def apply(config: pytest.Config, learner: bool) -> None:
    """Set what the command line left unset (called from the plugin's tryfirst pytest_configure,
    before pytest-timeout and the terminal reporter read their options)."""
    if not _timeout_given(config):
        config.option.timeout = CHECK_TIMEOUT if learner else PROJECT_TIMEOUT
    chars = config.option.reportchars or ""
    if learner and chars == "fE":  # pytest's default: the failures were shown, and the table counts them
        chars = "E"
    if "s" not in chars and "N" not in chars and "a" not in chars and "A" not in chars:
        chars += "s"
    config.option.reportchars = chars
    for line in WARNING_FILTERS:
        if line not in config.getini("filterwarnings"):
            config.addinivalue_line("filterwarnings", line)


_OTHER_PLUGINS_HEADER = ("benchmark:", "timeout:", "timeout method:", "timeout func_only:")


def learner_header(lines: list) -> list:
    """The header lines of other plugins, without their settings (a learner's run)."""
    kept = []
    for entry in lines:
        entry = [entry] if isinstance(entry, str) else list(entry)
        kept.append([line for line in entry if not line.startswith(_OTHER_PLUGINS_HEADER)])
    return kept


@contextlib.contextmanager
def hypothesis_for_the_call(test, learner: bool, must_fail: bool) -> Iterator[None]:
    """Hypothesis's settings for one call of ``test``, put back after it.

    A learner's run keeps its examples and the falsifying example, without the
    reproduction blob, the "explain" phase's notes and the shrinking. A check run on
    the untouched stubs (``must_fail``: the project's own run) is not shrunk either: a
    stub fails the same way for every input, and shrinking that failure cost the
    checkpoint's round-trip check 24.5 s of the project's 58 s run of tests/test_*.py.

    Set for the call, not as a profile when the run starts: a test's settings are bound
    when its module is imported, and a run inside another (tests/selftest's pytester
    runs) reuses the modules the outer run imported with shrinking on. The attribute
    read is Hypothesis's own (tests/selftest/test_settings.py checks it is still there)."""
    current = getattr(test, HYPOTHESIS_SETTINGS, None)
    if current is None or not (learner or must_fail):
        yield
        return
    from hypothesis import Phase, settings

    phases = [p for p in current.phases if p not in (getattr(Phase, "explain", None), Phase.shrink)]
    setattr(test, HYPOTHESIS_SETTINGS, settings(current, phases=phases, print_blob=current.print_blob and not learner))
    try:
        yield
    finally:
        setattr(test, HYPOTHESIS_SETTINGS, current)
