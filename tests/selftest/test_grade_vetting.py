"""The static vetting (kata/grading/vetting.py): what an ordinary solution writes passes, what reaches past it is found.

No checks run here: the vetting reads source. The grading runs that show what
follows from a finding are in test_grade.py and test_grade_attacks.py.
"""

import pytest
from test_grade_samples import ATTACKS, INDEPENDENT, attack

from kata import curriculum
from kata.grading.vetting import vet_source

NAMES = curriculum.names()

ORDINARY = {
    "imports": "from __future__ import annotations\nimport math, random, time, copy, itertools, functools\n"
               "from collections import OrderedDict, defaultdict, namedtuple, Counter\n"
               "from collections.abc import Mapping\nfrom typing import NamedTuple, Optional, Any\n"
               "from dataclasses import dataclass, field\nimport numbers\n"
               "import numpy as np\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn, optim\n"
               "from torch.utils.data import DataLoader, Subset\nimport torchvision.transforms as T\n"
               "import matplotlib.pyplot as plt\nfrom matplotlib.figure import Figure\nfrom kata.celeba import CelebA\n"
               "from kata import celeba\nfrom tqdm import tqdm\nfrom .devices import to_python\n",
    "a module class": "from torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
                      "        super().__init__()\n"
                      "        self._layers = nn.Sequential(nn.Linear(2, 1))\n"
                      "    def forward(self, input):\n        return self._layers(input)\n"
                      "    def __repr__(self):\n        return f'{type(self).__name__}()'\n",
    "introspection learners use": "def describe(x):\n    if hasattr(x, '_fields'):\n        return x._asdict()\n"
                                  "    return x.__class__.__name__, type(x).__name__, getattr(x, 'device', None)\n",
    "rebuild a container": "def rebuild(obj, f):\n    return type(obj)(f(v) for v in obj)\n",
    "a live plot": "import matplotlib\nmatplotlib.rcParams['figure.figsize'] = (12, 4)\n"
                   "class LivePlot:\n    def __init__(self, path=None):\n        self.path, self._n = path, 0\n"
                   "    def update(self, epoch, history):\n        self._n += 1\n",
    "errors and no_grad": "import torch\n@torch.no_grad()\ndef f(x):\n    try:\n        return x.item()\n"
                          "    except (ValueError, RuntimeError) as err:\n        raise TypeError('no') from err\n",
    "a main block": "if __name__ == '__main__':\n    print('hello')\n",
    "shadowed builtins": "def f(input, type=None, open=False):\n    return input, type, open\n",
}


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_what_an_ordinary_solution_writes_is_not_flagged(name):
    assert vet_source(ORDINARY[name], "exercises/x.py", NAMES) == []


def test_the_independent_implementation_is_not_flagged():
    for name, source in INDEPENDENT.items():
        assert vet_source(source, f"exercises/{name}.py", NAMES) == [], name


@pytest.mark.parametrize("kind", sorted(ATTACKS))
def test_every_attack_is_found(kind):
    findings = vet_source(attack(kind, "devices"), "exercises/devices.py", NAMES)
    assert findings, f"{kind} passed the vetting"
    assert all(f.file == "exercises/devices.py" and f.line >= 1 and f.construct and f.why for f in findings)


FOUND = {
    "import os": "import os\n",
    "import sys": "import sys as s\n",
    "import subprocess": "from subprocess import run\n",
    "import ctypes": "import ctypes\n",
    "import importlib": "import importlib\n",
    "import gc": "import gc\n",
    "import pytest": "import pytest\n",
    "_pytest": "from _pytest import reports\n",
    "kata.checks": "from kata.checks.book import book_cnn\n",
    "kata.project": "import kata.project\n",
    "a private torch module": "import torch._dynamo\n",
    "torch.load": "import torch\nm = torch.load('x')\n",
    "torch.hub": "from torch import hub\n",
    "torch.overrides": "import torch\nclass M(torch.overrides.TorchFunctionMode):\n    pass\n",
    "a global hook": "import torch\ntorch.nn.modules.module.register_module_forward_hook(print)\n",
    "np.load": "import numpy as np\nnp.load('x.npy', allow_pickle=True)\n",
    "torch.os": "import torch\ntorch.os.system('x')\n",
    "open": "data = open('/etc/passwd').read()\n",
    "exec": "exec('x = 1')\n",
    "eval as a default": "def f(e=eval):\n    return e('1')\n",
    "open as a default": "def f(o=open):\n    return o('/x')\n",
    "a class attribute named open": "class A:\n    open = None\n    def f(self):\n        return open('/x')\n",
    "__import__": "m = __import__('os')\n",
    "globals": "globals()['x'] = 1\n",
    "vars": "import torch\nvars(torch)['allclose'] = None\n",
    "getattr with a computed name": "import torch\nf = getattr(torch, 'al' + 'lclose')\n",
    "getattr of a dunder": "def f(g):\n    return getattr(g, '__globals__')\n",
    "getattr as a value": "import functools, torch\nfunctools.reduce(getattr, ['os'], torch)\n",
    "setattr on a library": "import torch\nsetattr(torch, 'allclose', None)\n",
    "a library attribute assigned": "import torch\ntorch.allclose = lambda *a, **k: True\n",
    "through an alias": "import torch\nt = torch.testing\nt.assert_close = print\n",
    "a class of a library patched": "from torch import nn\nnn.Module.train = lambda self, mode=True: self\n",
    "deleted": "import torch\ndel torch.equal\n",
    "a module as a value": "import torch\ndef patch(m):\n    m.equal = None\npatch(torch)\n",
    "defaults": "def f(g):\n    g.__defaults__ = (1,)\n",
    "code": "def f(g):\n    return g.__code__\n",
    "frames": "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame.f_back\n",
    "subclasses": "x = object.__subclasses__()\n",
    "class of class": "x = (1).__class__.__class__\n",
    "three-argument type": "X = type('X', (), {})\n",
    "type of type": "X = type(type(1))\n",
    "a metaclass": "class A(metaclass=type):\n    pass\n",
    "__eq__": "class Always(float):\n    def __eq__(self, other):\n        return True\n",
    "__eq__ assigned": "class Always(float):\n    __eq__ = lambda self, other: True\n",
    "__torch_function__": "import torch\nclass T(torch.Tensor):\n    __torch_function__ = None\n",
    "__bool__": "class B:\n    def __bool__(self):\n        return True\n",
    "__getattr__ of a module": "def __getattr__(name):\n    return None\n",
    "a dunder in a string": "name = '__code__'\n",
    "a dunder in a format field": "def f(g):\n    return '{0.__globals__}'.format(g)\n",
    "np.fromfile": "import numpy as np\nx = np.fromfile('/etc/shadow', dtype=np.uint8)\n",
    "np.loadtxt": "from numpy import loadtxt\n",
    "np.genfromtxt": "import numpy\nnumpy.genfromtxt('x.csv')\n",
    "torch.from_file": "import torch\nt = torch.from_file('/x', size=10)\n",
    "a storage from a file": "import torch\ns = torch.UntypedStorage.from_file('/x', False, 10)\n",
    "plt.imread": "import matplotlib.pyplot as plt\nplt.imread('/x.png')\n",
    "matplotlib.rc_file": "import matplotlib\nmatplotlib.rc_file('/x')\n",
    "PIL's Image.open": "from PIL import Image\nImage.open('/x.png')\n",
    "torchvision's ImageFolder": "from torchvision.datasets import ImageFolder\nImageFolder('/home')\n",
    "torchvision's folder loader": "from torchvision.datasets.folder import default_loader\n",
    "a relative import of something else": "from .secret import x\n",
    "a relative import upwards": "from .. import kata\n",
    "functools.wraps": "import functools\n",   # (allowed on its own: the next line is what is found)
}
FOUND["functools.wraps"] += "import torch\nw = functools.wraps(print)(torch.testing)\n"


@pytest.mark.parametrize("name", sorted(FOUND))
def test_each_way_past_what_the_exercises_need_is_found(name):
    assert vet_source(FOUND[name], "exercises/x.py", NAMES), name


def test_a_finding_says_file_line_construct_and_why():
    (finding,) = vet_source("x = 1\nimport os\n", "exercises/data.py", NAMES)
    assert (finding.file, finding.line, finding.construct) == ("exercises/data.py", 2, "import os")
    assert str(finding).startswith("exercises/data.py line 2: import os (`os` is not among the modules")


def test_a_module_that_is_not_python_is_not_vetted():
    assert vet_source("def f(:\n    import os\n", "exercises/x.py", NAMES) == []
