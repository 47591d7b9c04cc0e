"""A pytest plugin for CI's second environment only: torch 2.13.0+cpu beside PyPI's torchvision 0.28.0.

This machine holds torch 2.13.0's CPU build but no CPU build of torchvision
0.28.0; PyPI's torchvision 0.28.0 is a CUDA build, whose C extension (its
detection ops: nms, roi_align, ...) can't load beside a CPU torch. torchvision
0.28 then fails at import, because `torchvision/_meta_registrations.py`
registers fake kernels for `torchvision::nms` and `torchvision::qnms` without
first asking whether its ops loaded (it asks for every other op).

The kata uses only torchvision's Python parts (transforms, datasets.CelebA).
So, when the extension can't load, this plugin defines the schemas of those two
ops before anything imports torchvision; torchvision then imports, and calling
nms (which the kata never does) would say it has no kernel. A learner installs
a matching pair (PyTorch's CPU index serves both; see the README), and never
needs this.
"""

import glob
import importlib.util
import os

import torch


def _extension_loads() -> bool:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return True  # no torchvision: nothing to shim
    folder = list(spec.submodule_search_locations)[0]
    for library in glob.glob(os.path.join(folder, "_C*.so")):
        try:
            torch.ops.load_library(library)
        except OSError:
            return False
    return True


if not _extension_loads():
    _LIBRARY = torch.library.Library("torchvision", "DEF")  # kept alive for the process
    for _op in ("nms", "qnms"):
        _LIBRARY.define(f"{_op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
