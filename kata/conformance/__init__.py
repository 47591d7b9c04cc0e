"""The conformance table: the device behaviours the kata relies on, as CUDA has them.

``table.toml`` holds the behaviours (what is tried, what CUDA does, where that is written
down); :mod:`kata.conformance.runner` runs them on a device and compares.  The same table
runs on the simulated accelerator in CI (``tests/selftest/test_conformance.py``), and on
real CUDA and MPS wherever ``kata doctor`` finds them.  A row the simulator cannot match
says so (its ``simulator`` field), and then the simulator must refuse loudly, in
PyTorch's words, never differ silently.

From the command line, in a process of its own (the simulator changes the process it is
installed in)::

    python -m kata.conformance --device sim          # or cuda, mps; --json FILE; --all
"""

from .runner import TABLE, Behaviour, Outcome, load, run, summary

__all__ = ["TABLE", "Behaviour", "Outcome", "load", "run", "summary"]
