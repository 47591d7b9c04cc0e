"""Where the checks marked ``cuda`` run: real CUDA, Apple's MPS, or the simulated accelerator.

``--accelerator auto`` (the default) takes real CUDA, else MPS, else the
simulated one (:mod:`kata.sim`), when this torch can run it. The choice is made
on first use only (it imports torch), so pytest runs that never touch a check
stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kata.i18n import _, say

__all__ = ["CHOICES", "accelerator", "Accelerator", "accelerator_of", "install_if_simulated"]

CHOICES = ("auto", "cuda", "mps", "sim")
_CHOSEN = pytest.StashKey["Accelerator"]()


@dataclass(frozen=True)
class Accelerator:
    kind: str | None   # "cuda", "mps", "sim", or None: no accelerator, the cuda checks skip
    line: str          # what the run's header says, and why a skip happened

    @property
    def available(self) -> bool:
        return self.kind is not None


def _choose(choice: str) -> Accelerator:
    import torch

    from kata import sim

    cuda, mps = torch.cuda.is_available(), torch.backends.mps.is_available()
    simulated_ok, why_not = sim.support()
    torch_version = f"torch {torch.__version__}"
    if choice == "auto":
        if cuda:
            return Accelerator("cuda", say("real CUDA: {device} ({torch})", device=torch.cuda.get_device_name(0),
                                           torch=torch_version))
        if mps:
            return Accelerator("mps", say("Apple MPS ({torch})", torch=torch_version))
        if simulated_ok:
            return Accelerator("sim", say("simulated, no CUDA or MPS found ({torch})", torch=torch_version))
        return Accelerator(None, say("none: no CUDA or MPS, and {why_not}; the cuda checks are skipped",
                                     why_not=why_not))
    if choice == "cuda":
        return (Accelerator("cuda", say("real CUDA (forced): {device} ({torch})",
                                        device=torch.cuda.get_device_name(0), torch=torch_version))
                if cuda else Accelerator(None, _("--accelerator cuda, but no CUDA device here: the cuda checks "
                                                 "are skipped")))
    if choice == "mps":
        return (Accelerator("mps", say("Apple MPS (forced, {torch})", torch=torch_version)) if mps else
                Accelerator(None, _("--accelerator mps, but MPS is not available here: the cuda checks are "
                                    "skipped")))
    if not simulated_ok:
        return Accelerator(None, say("--accelerator sim, but {why_not}: the cuda checks are skipped",
                                     why_not=why_not))
    return Accelerator("sim", say("simulated (forced with --accelerator sim, {torch})", torch=torch_version))


def accelerator_of(config: pytest.Config) -> Accelerator:
    """This run's accelerator (worked out once per run)."""
    if _CHOSEN not in config.stash:
        config.stash[_CHOSEN] = _choose(config.getoption("kata_accelerator", "auto") or "auto")
    return config.stash[_CHOSEN]


def install_if_simulated(config: pytest.Config):
    """The simulated device, installed now if this run uses it (None otherwise).

    It must be installed before autograd's first backward pass in the process (the
    engine sizes its per-device queues then), so the plugin calls this while
    collecting, before any check runs."""
    if accelerator_of(config).kind != "sim":
        return None
    from kata import sim

    return sim.install()


@pytest.fixture(scope="session")
def accelerator(request: pytest.FixtureRequest):
    """The device the checks marked cuda run on: real CUDA, MPS, or the simulated one."""
    import torch

    chosen = accelerator_of(request.config)
    if not chosen.available:
        pytest.skip(chosen.line)
    if chosen.kind == "sim":
        return install_if_simulated(request.config)
    return torch.device(chosen.kind)
