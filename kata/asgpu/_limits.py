"""What the simulated GPU can't honour, said in one line (no torch here: the command imports it)."""

from __future__ import annotations

from kata.i18n import N_, say

__all__ = ["NOT_SIMULATED", "WHY", "NotSimulated"]

NOT_SIMULATED = N_("{what} is not simulated ({why}): `kata run` gives the script one simulated GPU, which computes "
                   "on the CPU; run it on a real GPU for that")
WHY = {
    "memory": N_("memory statistics: the simulated GPU has no memory of its own"),
    "stream": N_("streams and events beyond the default stream"),
    "compile": N_("torch.compile for cuda"),
    "nccl": N_("NCCL and more than one GPU"),
    "profiler": N_("a GPU's kernels and their times: the simulated GPU runs the CPU's kernels, which "
                   "ProfilerActivity.CPU profiles"),
    "ordinal": N_("there is one GPU, cuda:0"),
    "properties": N_("the properties of a GPU model: the simulated GPU is none"),
    "jit": N_("TorchScript keeps a module's parameters in C++, where the simulated GPU's tensors can't go; "
              "scripting or tracing a model already on the GPU works"),
}


class NotSimulated(RuntimeError):
    """Something the simulated GPU can't honour: the message says what, in one line."""

    def __init__(self, what: str, why: str):
        self.what, self.why = what, why
        super().__init__(say(NOT_SIMULATED, what=what, why=say(WHY[why])))
