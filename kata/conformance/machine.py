"""What this machine has, for ``kata doctor``: Python, torch, the accelerators, the packages.

:func:`survey` looks (it imports torch, and never installs the simulator in this
process); :func:`plan` says which of the doctor's steps run where, and why the others
can't.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field

from kata.i18n import N_, _, say

__all__ = ["NEEDED", "OPTIONAL", "Machine", "Step", "plan", "survey"]

# What pyproject.toml asks for (import name, distribution), and what each missing one stops.
# (What each stops is in English here; kata doctor shows it in the kata's language.)
NEEDED = {
    "torch": ("torch", N_("everything")),
    "torchvision": ("torchvision", N_("the data exercise, its checks and kata train")),
    "matplotlib": ("matplotlib", N_("the plotting exercise and two rows of the table")),
    "pytest": ("pytest", N_("every check, and kata doctor --full")),
    "pytest_benchmark": ("pytest-benchmark",
                         N_("every check (pyproject.toml passes --benchmark-skip) and kata bench")),
    "pytest_timeout": ("pytest-timeout", N_("the checks' time limits")),
    "hypothesis": ("hypothesis", N_("every check (conftest.py imports it)")),
    "tqdm": ("tqdm", N_("kata train's progress bars")),
    "watchfiles": ("watchfiles", N_("nothing: kata watch polls for changes without it")),
}
OPTIONAL = {  # pip install -e ".[notebook]"
    "ipykernel": ("ipykernel", N_("kata.check in Jupyter")),
    "nbclient": ("nbclient", N_("running the notebooks (python -m kata.notebook run)")),
    "nbformat": ("nbformat", N_("running the notebooks")),
}


@dataclass
class Machine:
    python: str
    platform: str
    torch: str | None = None
    torchvision: str | None = None
    torch_cuda: str | None = None  # the CUDA this torch was built for, or None (a CPU build)
    cuda: str | None = None  # "NVIDIA H200 (compute capability 9.0, 1 device)", or None
    cuda_why_not: str = ""
    driver: str | None = None  # the NVIDIA driver, as nvidia-smi reports it
    mps: bool = False
    simulator: bool = False
    simulator_why: str = ""
    packages: dict = field(default_factory=dict)  # distribution -> version, or None when missing
    bubblewrap: bool = False

    @property
    def accelerators(self) -> list[str]:
        """Where the conformance table runs: every real accelerator, and the simulator."""
        return [kind for kind, here in (("cuda", self.cuda), ("mps", self.mps), ("sim", self.simulator)) if here]

    def missing(self, names) -> list[str]:
        return [names[module][0] for module in names if self.packages.get(names[module][0]) is None]

    def as_dict(self) -> dict:
        return {**asdict(self), "accelerators": self.accelerators}


def _version(distribution: str, module: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return _("(importable, no metadata)") if importlib.util.find_spec(module) else None


def survey() -> Machine:
    machine = Machine(python=platform.python_version(), platform=f"{platform.system()} {platform.machine()}")
    for module, (distribution, _stops) in {**NEEDED, **OPTIONAL}.items():
        machine.packages[distribution] = _version(distribution, module)
    machine.bubblewrap = shutil.which("bwrap") is not None
    if machine.packages["torch"] is None:
        return machine
    import torch

    from kata import sim

    machine.torch, machine.torch_cuda = torch.__version__, torch.version.cuda
    if machine.packages["torchvision"] is not None:
        try:
            import torchvision

            machine.torchvision = torchvision.__version__
        except Exception as err:  # a torchvision built for another torch fails to import: say so
            error = f"{type(err).__name__}: {str(err)[:120]}"
            machine.torchvision = say("unusable ({error})", error=error)
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        count = torch.cuda.device_count()
        machine.cuda = say(N_("{name} (compute capability {major}.{minor}, {memory:.0f} GiB, {count} devices)")
                           if count > 1 else N_("{name} (compute capability {major}.{minor}, {memory:.0f} GiB, "
                                                "{count} device)"), name=props.name, major=props.major,
                           minor=props.minor, memory=props.total_memory / 2**30, count=count)
        machine.driver = _driver()
    else:
        machine.cuda_why_not = ("torch.cuda.is_available() is False" if torch.version.cuda
                                else _("this torch is a CPU build"))
    machine.mps = torch.backends.mps.is_available()
    machine.simulator, machine.simulator_why = sim.support()
    return machine


def _driver() -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


@dataclass(frozen=True)
class Step:
    name: str  # in English (the doctor's key for it); shown as _(name)
    where: list[str]  # accelerators it runs on ("cuda", "mps", "sim", "cpu"); empty: it can't run here
    why: str  # where it runs, or why it can't (in the kata's language)
    full: bool = False  # run by `kata doctor --full` only


def plan(machine: Machine, has_solutions: bool, has_corpus: bool = False) -> list[Step]:
    """Where each check runs on this machine, and why: the cuda-marked checks and kata bench as a
    learner runs them, and the doctor's own steps (the table; with --full the cuda-marked checks
    of solutions/, the GPU rows of kata bench, the sync cross-check and, where this copy has the
    corpus's tests, the corpus under kata run)."""
    accelerators = machine.accelerators
    first = accelerators[0] if accelerators else None
    checks_why = (say("on real CUDA ({gpu})", gpu=machine.cuda) if first == "cuda" else
                  _("on Apple MPS (no CUDA here)") if first == "mps" else
                  _("on the simulated accelerator (no CUDA or MPS here)") if first == "sim" else
                  say("skipped: no CUDA or MPS, and {why}", why=machine.simulator_why))
    steps = [Step(N_("the checks marked cuda (pytest exercises, kata.check)"), [first] if first else [], checks_why),
             Step(N_("kata bench"), ["cpu", "cuda"] if machine.cuda else ["cpu"],
                  _("CPU and CUDA rows") if machine.cuda else _("CPU rows only: its GPU rows need CUDA")),
             Step(N_("conformance table"), accelerators,
                  say("on {accelerators}", accelerators=_names(accelerators)) if accelerators
                  else say("no accelerator, and {why}", why=machine.simulator_why))]
    missing = [name for name in ("pytest", "pytest-benchmark", "pytest-timeout", "hypothesis")
               if machine.packages.get(name) is None]
    if missing:
        why = say("pytest can't run the checks without {packages}", packages=", ".join(missing))
        return steps + [Step(name, [], why, full=True) for name in (N_("cuda-marked checks"),
                                                                    N_("kata bench GPU rows"),
                                                                    N_("the corpus under kata run"))] + [
            Step(N_("sync cross-check"), ["cuda"] if machine.cuda and machine.simulator else [],
                 _cross_check_why(machine), full=True)]
    steps.append(Step("cuda-marked checks", accelerators if has_solutions else [],
                      say("pytest solutions -m cuda on {accelerators}", accelerators=_names(accelerators))
                      if has_solutions else
                      _("this copy has no solutions/ (a student release): nothing known to pass to run them on"),
                      full=True))
    steps.append(Step("kata bench GPU rows", ["cuda"] if machine.cuda and has_solutions else [],
                      _("the epoch benchmarks on CUDA") if machine.cuda and has_solutions
                      else _("no CUDA here: a GPU's timings need a GPU") if not machine.cuda
                      else _("no solutions/ to time"), full=True))
    steps.append(Step("sync cross-check", ["cuda"] if machine.cuda and machine.simulator else [],
                      _cross_check_why(machine), full=True))
    runs = machine.cuda and machine.simulator and has_corpus
    steps.append(Step("the corpus under kata run", ["cuda", "sim"] if runs else [],
                      _corpus_why(machine, has_corpus), full=True))
    return steps


def _corpus_why(machine: Machine, has_corpus: bool) -> str:
    if not has_corpus:
        return _("this copy has no tests/selftest/test_run.py (a student release)")
    if not machine.cuda:
        return _("needs CUDA: it runs tests/corpus's code under kata run on the GPU and on the simulator, and "
                 "compares their verdicts")
    if not machine.simulator:
        return say("the simulator can't run here ({why})", why=machine.simulator_why)
    return _("tests/corpus's code under kata run on CUDA and on the simulator, each held to the verdicts its tests "
             "expect")


def _cross_check_why(machine: Machine) -> str:
    if not machine.cuda:
        return _("needs CUDA: it compares the simulator's sync counts with torch.cuda.set_sync_debug_mode's")
    if not machine.simulator:
        return say("the simulator can't run here ({why})", why=machine.simulator_why)
    return _("the table's sync rows, counted by torch.cuda.set_sync_debug_mode and by the simulator")


def _names(accelerators: list[str]) -> str:
    words = {"cuda": N_("real CUDA"), "mps": N_("Apple MPS"), "sim": N_("the simulated accelerator")}
    return _(" and ").join(_(words[a]) for a in accelerators)

