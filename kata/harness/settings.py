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
  converts only the loss lists), and a header without the settings of
  pytest-benchmark and pytest-timeout.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["CHECK_TIMEOUT", "PROJECT_TIMEOUT", "apply", "learner_header", "quiet_hypothesis"]

CHECK_TIMEOUT = 60      # seconds per check in a learner's run
PROJECT_TIMEOUT = 300   # seconds per test in the project's own run
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


def quiet_hypothesis() -> None:
    """A learner's run: Hypothesis keeps its examples and the falsifying example, without
    the reproduction blob, the "explain" phase's notes and the shrinking."""
    try:
        from hypothesis import Phase, settings
    except ImportError:
        return
    current = settings.default
    phases = [p for p in current.phases if p not in (getattr(Phase, "explain", None), Phase.shrink)]
    settings.register_profile("kata-learner", parent=current, print_blob=False, phases=phases)
    settings.load_profile("kata-learner")
