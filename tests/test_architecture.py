"""The tree is the architecture: packages by layer, imports only downwards, no cycles, small units.

``python tests/test_architecture.py`` prints the measurements (import graph edges, cycles, the
longest functions and modules) that the tests below bound.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "gatelab"
# Lower layers first; a module may import its own layer and the layers before it, never later ones.
# Analyses (kernels, neurons, pruning) sit below training: an IMP round trains with its masks.
LAYERS = ("core", "data", "nets", "analyses", "training", "launch", "papers")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / PKG).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, level: int, current: str, is_pkg: bool) -> str:
    if level == 0:
        return name
    base = current.split(".")
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the gatelab modules it imports (anywhere in the file, deferred imports included)."""
    graph = {}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(node.module or "", node.level, mod, is_pkg)
                names = [target] + [f"{target}.{a.name}" for a in node.names]
            else:
                continue
            for n in names:
                while n and n not in mods:  # `from pkg import module` or `import pkg.mod.attr`
                    n = n.rpartition(".")[0]
                if n and n.startswith(PKG) and n != mod and not mod.startswith(n + "."):
                    deps.add(n)
        graph[mod] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layer(mod: str) -> int | None:
    parts = mod.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def function_lengths(mods: dict[str, Path]) -> list[tuple[int, str]]:
    out = []
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((node.end_lineno - node.lineno + 1, f"{mod}.{node.name}:{node.lineno}"))
    return sorted(out, reverse=True)


def module_lengths(mods: dict[str, Path]) -> list[tuple[int, str]]:
    return sorted(((len(p.read_text().splitlines()), m) for m, p in mods.items()), reverse=True)


def test_no_import_cycles():
    assert cycles(imports(modules())) == []


def test_every_module_lives_in_a_layer_and_imports_only_downwards():
    mods = modules()
    # __main__ and run: the commands, above all; conf: the configs (a package for Hydra, no code)
    stray = [m for m in mods if m not in (PKG, f"{PKG}.__main__", f"{PKG}.run", f"{PKG}.conf") and layer(m) is None]
    assert stray == [], f"modules outside the layers {LAYERS}: {stray}"
    upward = [(m, d) for m, deps in imports(mods).items() for d in deps
              if layer(m) is not None and layer(d) is not None and layer(d) > layer(m)]
    assert upward == [], f"imports of a later layer: {upward}"


def test_no_module_over_the_bound():
    long = [(n, m) for n, m in module_lengths(modules()) if n > MAX_MODULE_LINES]
    assert long == [], f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_the_bound():
    long = [(n, f) for n, f in function_lengths(modules()) if n > MAX_FUNCTION_LINES]
    assert long == [], f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_checker_sees_a_cycle_and_an_upward_import():
    """The measurement itself: a cycle and a layer violation are found."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer("gatelab.core.runs") < layer("gatelab.training.loop") < layer("gatelab.papers.npf")


if __name__ == "__main__":
    mods = modules()
    graph = imports(mods)
    print(f"{len(mods)} modules, {sum(map(len, graph.values()))} import edges")
    print("cycles:", cycles(graph) or "none")
    print("longest modules:", module_lengths(mods)[:5])
    print("longest functions:", function_lengths(mods)[:8])
    sys.exit(0)
