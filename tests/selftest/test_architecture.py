"""The shape of the kata package: small modules by role, no cycles, public names declared.

Read statically (with `ast`), so these run in milliseconds and import nothing.
"""

import ast
import re
from pathlib import Path

import pytest

from kata.project import locate

PACKAGE = locate().root / "kata"
MAX_LINES = 500
# kata/grading: a grader on standard tools (bubblewrap, prlimit, pytest's report log), not its own (2000 until #32,
# which brings each hand-in's sandbox back to its start, checked, and reads every byte from it as hostile input;
# #33 took the audit out and simplified the rest, nothing of it moved to another package, back within 2000)
GRADER_LINES = 2000
SUB_PACKAGES = {"harness", "checks", "sim", "data", "commands", "grading"}


def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = modules()


def tree(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(), filename=str(MODULES[name]))


def imports_of(name: str) -> list[tuple[str, list[str], int]]:
    """(kata module imported, names taken from it, line) for each import of a kata module."""
    found = []
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree(name)):
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.split(".")[0] == "kata"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            if base.split(".")[0] == "kata":
                found.append((base, [a.name for a in node.names], node.lineno))
    return found


def test_the_package_is_in_sub_packages_by_role():
    present = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert SUB_PACKAGES <= present, f"missing sub-packages: {SUB_PACKAGES - present}"
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= 9, f"kata/ holds {len(flat)} modules at its top ({flat}): put new ones in a sub-package"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_longer_than_about_500_lines(name):
    lines = MODULES[name].read_text().count("\n")
    assert lines <= MAX_LINES, f"{MODULES[name].relative_to(PACKAGE.parent)} has {lines} lines: split it by role"


def test_the_grader_stays_within_its_budget():
    files = sorted(p for p in (PACKAGE / "grading").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    lines = sum(p.read_text().count("\n") for p in files)
    assert lines <= GRADER_LINES, (f"kata/grading holds {lines} lines, more than {GRADER_LINES}: what a standard tool "
                                   "does (bubblewrap, prlimit, cgroups, pytest's report log) belongs to that tool")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_lists_its_public_names(name):
    if name.endswith("__main__"):
        return
    module = tree(name)
    declared = None
    for node in module.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            declared = ast.literal_eval(node.value)
    defined = {n.name for n in module.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
    # pytest's hooks (pytest_*) are the plugin's interface to pytest, not names to import.
    public = {n for n in defined if not n.startswith(("_", "pytest_"))}
    if not public:
        return
    assert declared is not None, f"{name} defines {sorted(public)} but no __all__"
    assert public <= set(declared), f"{name}: public but not in __all__: {sorted(public - set(declared))}"


def test_no_module_uses_another_modules_private_names():
    offences = []
    for name in MODULES:
        for module, taken, line in imports_of(name):
            if module == name:
                continue
            mine = name.rsplit(".", 1)[0] if MODULES[name].name != "__init__.py" else name
            # A package's own private modules are its business: kata.sim may import kata.sim._device.
            private_module = [p for p in module.split(".") if p.startswith("_")]
            if private_module and not module.startswith(mine + "."):
                offences.append(f"{name} line {line} imports the private module {module}")
            # `_` is gettext's own name for "translate this" (kata.i18n), public by convention.
            offences += [f"{name} line {line} takes {t} from {module}" for t in taken
                         if t.startswith("_") and not t.startswith("__") and t != "_"]
    assert not offences, "\n".join(offences)


def test_there_is_no_import_cycle():
    graph = {name: {m for m, _, _ in imports_of(name) if m in MODULES and m != name} for name in MODULES}
    # A package's __init__ re-exporting its own modules is not a cycle of roles; leave those edges out.
    for name, edges in graph.items():
        graph[name] = {m for m in edges if not (MODULES[m].name == "__init__.py" and name.startswith(m + "."))}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


NOQA = re.compile(r"#\s*(ruff:\s*)?noqa\b(?P<rest>.*)$")


def test_every_noqa_names_its_reason():
    from kata import curriculum, pristine

    root = locate().root
    ours = [*PACKAGE.rglob("*.py"), *(root / "tests").rglob("*.py"), root / "conftest.py",
            *(root / "solutions").glob("*.py")]
    files = {str(path.relative_to(root)): path.read_text() for path in ours}
    # the stubs as handed out, not exercises/ as it is: in a learner's copy it holds their work
    files |= {f"exercises/{name}.py": source for name in curriculum.names()
              if (source := pristine.stub_source(name)) is not None}
    bare = []
    for path, text in files.items():
        for number, line in enumerate(text.splitlines(), 1):
            found = NOQA.search(line)
            if found and '"' not in line[:found.start()].split("#")[-1]:  # a comment, not a string about one
                if " - " not in found["rest"] or not found["rest"].split(" - ", 1)[1].strip():
                    bare.append(f"{path}:{number}: {line.strip()}")
    assert not bare, "a `# noqa` must say why (`# noqa: E402 - reason`):\n" + "\n".join(bare)
