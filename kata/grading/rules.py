"""What these exercises need, and what reaches past it: the rules of the static vetting (kata/grading/vetting.py).

An ordinary solution of the six exercises imports torch, torchvision, numpy,
matplotlib (PIL under them), a few modules of the standard library, tqdm for a
progress bar, ``kata.celeba``, and the other exercises' modules; it defines
functions and classes with ``__init__``, ``__call__``, ``__len__``,
``__getitem__`` and the like; it reads ``__name__`` or ``__class__``, a named
tuple's ``_fields``, its own objects' private attributes. It does not open
files (matplotlib's ``savefig`` writes the one file an exercise asks for),
start processes, look at frames or code objects, or change the libraries the
checks use. Changing a rule here changes what is flagged; the teacher's README
(``kata grade``: "What is flagged") and the learners' (``kata release``) say
it in words.
"""

from __future__ import annotations

__all__ = ["ALLOWED_MODULES", "CHECKED_BUILTINS", "DENIED_ATTRIBUTES", "DENIED_ATTRIBUTE_PREFIXES", "DENIED_BUILTINS",
           "DENIED_PATHS", "DUNDER_DEFINES", "DUNDER_NAMES", "DUNDER_READS", "FILE_ATTRIBUTES", "FILE_PATHS",
           "KATA_ALLOWED", "NAMEDTUPLE_API", "SHOWN_MODULES", "SYSTEM_MODULES", "denied_attribute", "denied_path",
           "reads_files", "under"]

# Modules a solution may import (with their public submodules, minus DENIED_PATHS).
ALLOWED_MODULES = frozenset({
    "torch", "torchvision", "numpy", "matplotlib", "PIL",
    "math", "cmath", "collections", "typing", "typing_extensions", "functools", "itertools", "numbers",
    "dataclasses", "copy", "time", "random", "statistics", "operator", "enum", "abc", "decimal",
    "fractions", "re", "json", "warnings", "textwrap", "contextlib", "__future__", "tqdm",
})
KATA_ALLOWED = ("kata.celeba",)
SHOWN_MODULES = "torch, torchvision, numpy, matplotlib, math, collections, typing, functools, ..."

# Dotted paths (and everything under them) that load or run code, or change a library for everyone.
DENIED_PATHS = (
    "torch.hub", "torch.load", "torch.serialization", "torch.utils.cpp_extension", "torch.utils.model_zoo",
    "torch.multiprocessing", "torch.distributed", "torch.package", "torch.library", "torch.ops",
    "torch.classes", "torch.overrides", "torch.fx", "torch.jit.load", "torch.export",
    "numpy.load", "numpy.f2py", "numpy.ctypeslib", "numpy.distutils", "numpy.lib.format", "numpy.lib.npyio",
    "numpy.memmap", "matplotlib.testing", "typing.get_type_hints", "dataclasses.make_dataclass",
    "operator.attrgetter", "operator.methodcaller", "functools.update_wrapper", "functools.wraps",
)
# Dotted paths (and everything under them) and attribute names (on any object) that read or
# list files: the exercises get their data from their arguments and kata.celeba.
FILE_PATHS = (
    "numpy.fromfile", "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromregex", "torch.from_file",
    "matplotlib.image.imread", "matplotlib.pyplot.imread", "matplotlib.rc_file", "PIL.Image.open",
    "torchvision.datasets.folder", "torchvision.datasets.ImageFolder", "torchvision.datasets.DatasetFolder",
    "torchvision.datasets.utils",
)
FILE_ATTRIBUTES = frozenset({"fromfile", "loadtxt", "genfromtxt", "fromregex", "from_file", "imread", "rc_file"})
# Attribute names refused on any object: modules that reach the system or the interpreter's
# insides (a library imported them: `torch.os`), frames and code, global hooks.
SYSTEM_MODULES = frozenset({
    "os", "sys", "subprocess", "ctypes", "builtins", "importlib", "inspect", "gc", "pickle", "marshal",
    "shutil", "socket", "threading", "multiprocessing", "mmap", "resource", "posix", "nt", "pty", "atexit",
    "faulthandler", "runpy", "pkgutil", "sysconfig", "platform", "traceback", "linecache", "weakref",
    "pathlib", "tempfile", "zipfile", "tarfile", "urllib", "http", "ssl", "asyncio", "concurrent", "io",
    "posixpath", "ntpath", "shelve", "dbm", "sqlite3", "webbrowser", "zipimport", "signal", "types",
})
DENIED_ATTRIBUTES = SYSTEM_MODULES | frozenset({
    "Popen", "system", "popen", "spawnv", "spawnl", "execv", "execve", "execvp", "fork", "forkpty",
    "killpg", "environ", "putenv",
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_lasti", "tb_frame", "tb_next",
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "co_code", "co_consts",
    "settrace", "setprofile", "addaudithook", "currentframe", "get_referrers", "get_objects",
    "attrgetter", "methodcaller", "get_type_hints", "make_dataclass", "ABCMeta", "EnumMeta", "EnumType",
    "load_library", "load_inline", "load_state_dict_from_url",
})
DENIED_ATTRIBUTE_PREFIXES = ("register_module_",)   # torch.nn.modules.module: hooks on every model's forward
# The dunder attributes ordinary code reads.
DUNDER_READS = frozenset({"__init__", "__name__", "__qualname__", "__doc__", "__len__", "__getitem__",
                          "__iter__", "__next__", "__call__", "__repr__", "__str__", "__contains__",
                          "__version__", "__class__"})
# The dunder names ordinary code uses as names.
DUNDER_NAMES = frozenset({"__name__", "__doc__", "__all__", "__version__", "__author__"})
# The dunder methods an ordinary class defines.
DUNDER_DEFINES = frozenset({"__init__", "__post_init__", "__repr__", "__str__", "__len__", "__getitem__",
                            "__setitem__", "__iter__", "__next__", "__call__", "__enter__", "__exit__",
                            "__contains__", "__slots__", "__doc__", "__all__", "__match_args__"})
# A named tuple's public methods and fields (they start with an underscore).
NAMEDTUPLE_API = frozenset({"_fields", "_asdict", "_replace", "_make", "_field_defaults"})
# Builtins that reach past the allowed modules.
DENIED_BUILTINS = frozenset({"open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars",
                             "breakpoint", "input", "help", "exit", "quit", "__builtins__", "__loader__",
                             "__spec__", "__file__", "__cached__", "memoryview"})
# Builtins allowed only as a direct call, with their arguments checked.
CHECKED_BUILTINS = frozenset({"getattr", "setattr", "delattr", "type"})


def under(path: str, roots) -> bool:
    """Whether a dotted path is one of `roots` or inside one (``torch.hub.load`` is under ``torch.hub``)."""
    return any(path == root or path.startswith(root + ".") for root in roots)


def denied_path(path: str) -> bool:
    """Whether a dotted path (``torch.hub.load``) is in, or under, :data:`DENIED_PATHS`."""
    return under(path, DENIED_PATHS)


def reads_files(path: str) -> bool:
    """Whether a dotted path is in, or under, :data:`FILE_PATHS`."""
    return under(path, FILE_PATHS)


def denied_attribute(name: str) -> bool:
    """Whether an attribute name is refused on any object."""
    return name in DENIED_ATTRIBUTES or name.startswith(DENIED_ATTRIBUTE_PREFIXES)
