"""The package layout: public module paths are modules (no function or other object shadows a module), the modules of
jaxse3 import each other without a cycle and only from the layers below (docs/architecture.md), and a package's
private modules (``jaxse3.X._y``) are imported only from inside ``jaxse3/X/``.

Imports are read from the source with ``ast`` (every ``import`` statement, including those inside functions), so the
checks do not depend on which modules earlier tests happened to import.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import pkgutil
import types

import pytest

import jaxse3

PACKAGE_DIR = pathlib.Path(jaxse3.__file__).parent
REPO = PACKAGE_DIR.parent
#: scripts outside the package that are run or imported by users: they may not use private modules either
SCRIPT_DIRS = ("examples", "benchmarks")


def _module_files() -> dict[str, pathlib.Path]:
    """Dotted name → source file of every module of jaxse3 (packages by their ``__init__.py``)."""
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _module_files()
PACKAGES = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")


def _is_private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split(".")[1:])


def _source(node: ast.ImportFrom, package: str | None, path: pathlib.Path) -> str:
    """The absolute name of the module that ``from ... import`` reads (relative imports resolved from ``package``)."""
    if not node.level:
        return node.module
    assert package is not None, f"{path}: relative import in a script"
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _imports(path: pathlib.Path, name: str | None) -> set[str]:
    """The modules that the file at ``path`` (module ``name``, None for a script) imports, anywhere in its body:
    ``from P import x`` counts as an import of the module ``P.x`` when that is a module of jaxse3, else of ``P``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = None
    if name is not None:
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _source(node, package, path)
            found.update(
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source for alias in node.names
            )
    return found


# ---------------------------------------------------------------------------------------------------------------------
# (a) public module paths are modules


def _shadowing_bindings(package: str) -> list[str]:
    """Names that ``package/__init__.py`` binds at its top level to something other than its submodule of that name
    (read from the source: the binding in effect until, and unless, the submodule is imported)."""
    submodules = {name.rpartition(".")[2] for name in MODULES if name.rpartition(".")[0] == package}
    tree = ast.parse(MODULES[package].read_text(encoding="utf-8"))
    problems = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            source = _source(node, package, MODULES[package])
            for alias in node.names:
                bound = alias.asname or alias.name
                if bound in submodules and (source != package or alias.name != bound):
                    problems.append(f"{package}/__init__.py binds {bound} to {source}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.partition(".")[0]
                if bound in submodules and alias.name != f"{package}.{bound}":
                    problems.append(f"{package}/__init__.py binds {bound} to {alias.name}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in submodules:
            problems.append(f"{package}/__init__.py defines {node.name}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            problems += [
                f"{package}/__init__.py assigns {t.id}"
                for t in targets
                if isinstance(t, ast.Name) and t.id in submodules
            ]
    return problems


def test_walk_finds_the_modules():
    """pkgutil and the source files agree; jaxse3.rigid's public modules are the ones that are used as modules."""
    names = {info.name for info in pkgutil.walk_packages(jaxse3.__path__, "jaxse3.")}
    assert names == set(MODULES) - {"jaxse3"}
    public_rigid = {
        n
        for n in names
        if n.startswith("jaxse3.rigid.") and not n.startswith("jaxse3.rigid.absolute.") and not _is_private(n)
    }
    assert public_rigid == {"jaxse3.rigid.absolute", "jaxse3.rigid.interop", "jaxse3.rigid.joints"}


#: packages whose attributes shadow submodules, to be fixed there (renaming the module private, as in jaxse3.rigid, or
#: binding the module); each entry is an expected failure until then
_SHADOWED: dict[str, str] = {}  # package -> why a submodule is shadowed (none today)


@pytest.mark.parametrize(
    "package",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=_SHADOWED[p])) if p in _SHADOWED else p
        for p in PACKAGES
    ],
)
def test_submodules_are_modules_not_shadowed(package):
    """Every public submodule of ``package`` (pkgutil; names not starting with "_") imports as a module, and the
    package's attribute of each submodule's name is that module, both as its ``__init__`` binds it (read from the
    source) and after the import: no function shadows a module, as ``jaxse3.rigid.rnea`` once named a function while
    ``rigid/rnea.py`` was a module."""
    parent = importlib.import_module(package)
    problems = _shadowing_bindings(package)
    for info in pkgutil.iter_modules(parent.__path__, package + "."):
        module = importlib.import_module(info.name)
        attr = info.name.rpartition(".")[2]
        if not isinstance(module, types.ModuleType):
            problems.append(f"{info.name} imports as {type(module).__name__}")
        elif getattr(parent, attr, module) is not module:
            problems.append(f"{info.name} is {getattr(parent, attr)!r}, not the module {info.name}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------------------------------
# (b) no import cycle; layers import from below


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph, as a closed path, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return path[path.index(succ) :] + [succ]
            if succ not in state and (found := visit(succ)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_cycle_finder():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_modules_import_without_cycles():
    """The import graph of the modules of jaxse3 (packages' ``__init__`` aside, which import their children; imports
    inside functions included) is acyclic."""
    leaves = {name: path for name, path in MODULES.items() if path.name != "__init__.py"}
    graph = {name: {t for t in _imports(path, name) if t in leaves and t != name} for name, path in leaves.items()}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
    assert "jaxse3.rigid._rnea" in graph["jaxse3.rigid._rnea_derivatives"]  # the graph is not empty


#: the layers of docs/architecture.md, lowest first: a top-level module or package imports only from lower layers
#: (and from itself); modules of one layer do not import each other
LAYERS = (
    ("_batched_linalg", "_small_products", "_chunks"),
    ("_runtime",),
    ("_compile",),
    ("lie",),
    ("so3", "se3", "approx"),  # aliases of the lie modules
    ("integrate",),
    ("rigid", "rod"),
    ("linkage",),
    ("sim",),
    ("optim",),
    ("viz",),
    ("demo",),
    ("cli",),
)


def test_layers_import_only_from_below():
    level = {top: i for i, layer in enumerate(LAYERS) for top in layer}
    top = lambda name: name.split(".")[1]
    assert set(level) == {top(n) for n in MODULES if n != "jaxse3"}, "a new top-level module: place it in LAYERS"
    upward = sorted(
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if name != "jaxse3"
        for target in _imports(path, name)
        if target in MODULES
        and target != "jaxse3"
        and top(target) != top(name)
        and level[top(target)] >= level[top(name)]
    )
    assert not upward, "\n".join(upward)


def test_first_order_rigid_modules_never_import_second_order_ones():
    """Pinocchio's rule: a derivative module builds on its base algorithm, never the reverse, and first-order
    derivatives never import second-order ones."""
    rigid = {name: path for name, path in MODULES.items() if name.startswith("jaxse3.rigid._")}
    for name, path in rigid.items():
        if "second_order" in name or name == "jaxse3.rigid._rules":
            continue
        second = sorted(t for t in _imports(path, name) if t.startswith("jaxse3.rigid.") and "second_order" in t)
        assert not second, f"{name} imports {second}"


# ---------------------------------------------------------------------------------------------------------------------
# (c) private modules stay inside their package


def _owner(target: str) -> str | None:
    """The package whose private module ``target`` is (``jaxse3.lie`` for ``jaxse3.lie._algebra``), or None."""
    parts = target.split(".")
    if parts[0] != "jaxse3":
        return None
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_"):
            return ".".join(parts[:i])
    return None


def _private_imports_from_outside() -> dict[str, list[str]]:
    """Subpackage of jaxse3 (``lie``, ``rigid``, …) → ``"importer imports target"`` for every import of one of its
    private modules from outside it, by the modules of jaxse3 and the scripts of :data:`SCRIPT_DIRS`."""
    sources = [(name, path) for name, path in MODULES.items()]
    sources += [(None, path) for d in SCRIPT_DIRS for path in sorted((REPO / d).glob("*.py"))]
    out: dict[str, list[str]] = {}
    for name, path in sources:
        for target in sorted(_imports(path, name)):
            owner = _owner(target)
            if owner is None or owner == "jaxse3":  # jaxse3._runtime etc.: private to the whole library
                continue
            if name is not None and (name == owner or name.startswith(owner + ".")):
                continue
            who = name or str(path.relative_to(REPO))
            out.setdefault(owner.split(".")[1], []).append(f"{who} imports {target}")
    return out


#: private modules imported from outside their package, to be removed by making those modules public or the names
#: re-exported; each entry is an expected failure until then
_KNOWN_PRIVATE_IMPORTS: dict[str, str] = {}  # package -> who imports its private modules (none today)
_SUBPACKAGES = sorted({name.split(".")[1] for name in PACKAGES if name != "jaxse3"})


@pytest.mark.parametrize(
    "package",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=_KNOWN_PRIVATE_IMPORTS[p]))
        if p in _KNOWN_PRIVATE_IMPORTS
        else p
        for p in _SUBPACKAGES
    ],
)
def test_private_modules_are_imported_only_inside_their_package(package):
    """No module outside ``jaxse3/<package>/`` (nor an example or benchmark script) imports ``jaxse3.<package>._x``;
    tests may, where they test internals."""
    offenders = _private_imports_from_outside().get(package, [])
    assert not offenders, "\n".join(offenders)


def test_private_import_finder():
    assert _owner("jaxse3.rigid._rnea") == "jaxse3.rigid" and _owner("jaxse3.rigid.interop") is None
    assert _owner("jaxse3._runtime") == "jaxse3" and _owner("numpy._core") is None
    found = _private_imports_from_outside()
    assert any("jaxse3.lie._" in line for line in found.get("lie", [])) == ("lie" in _KNOWN_PRIVATE_IMPORTS)


# ---------------------------------------------------------------------------------------------------------------------
# (d) the public API is typed


def _unannotated(path: pathlib.Path) -> list[str]:
    """Public functions (module level) and public methods of public classes in ``path`` that miss an annotation of a
    parameter (self/cls aside) or of the return (``__init__`` needs none)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions = [(node.name, node)]
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            functions = [(f"{node.name}.{f.name}", f) for f in node.body if isinstance(f, ast.FunctionDef)]
        else:
            continue
        for name, f in functions:
            short = name.rpartition(".")[2]
            if short.startswith("_") and short not in ("__init__", "__call__"):
                continue
            args = [a for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs if a.arg not in ("self", "cls")]
            args += [a for a in (f.args.vararg, f.args.kwarg) if a is not None]
            missing = [a.arg for a in args if a.annotation is None]
            if f.returns is None and short != "__init__":
                missing.append("return")
            if missing:
                found.append(f"{path.name}:{f.lineno} {name}: {', '.join(missing)}")
    return found


def test_public_functions_are_annotated():
    """Every public function and method of jaxse3 annotates its parameters and return (jaxtyping shapes for arrays)."""
    missing = [f"{path.parent.name}/{line}" for path in sorted(set(MODULES.values())) for line in _unannotated(path)]
    assert not missing, "\n".join(missing)


def test_annotation_finder(tmp_path):
    src = "def f(a, b: int) -> int: ...\nclass C:\n    def __init__(self, x: int): ...\n    def g(self): ...\n"
    path = tmp_path / "probe.py"
    path.write_text(src, encoding="utf-8")
    assert [line.split(" ", 1)[1] for line in _unannotated(path)] == ["f: a", "C.g: return"]
