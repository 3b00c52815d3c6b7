"""The package's layers: every import at the top of its file, each layer importing only from the layers
below it, and no import cycle between modules (issue 17)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "attention_paths"
# layer of each subpackage (a module may import from its own layer and the ones below)
LAYERS = {"base": 0, "theory": 1, "plotting": 1, "sampling": 2, "tasks": 3, "runs": 4, "__main__": 5}
ALLOWED = {"plotting": {"base", "plotting"}}  # plotting draws; it uses nothing of the theory or the tasks
# the deliberate function-level imports: optional dependencies, each with its reason in the code
FUNCTION_LEVEL = {("__main__", "distributed")}


def _modules():
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        yield ".".join(["attention_paths", *parts]), f


def _imports(tree):
    """(module-level imports, function-level imports) of a module, as (target, line)."""
    top, inner = [], []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if isinstance(child, ast.ImportFrom):
                    assert child.level == 0, f"relative import at line {child.lineno}"
                    base = child.module
                    names = [f"{base}.{a.name}" for a in child.names] if base == "attention_paths" else [base]
                else:
                    names = [a.name for a in child.names]
                (inner if nested else top).extend((n, child.lineno) for n in names)
            visit(child, nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return top, inner


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _graph():
    modules = dict(_modules())
    graph, inner = {}, {}
    for name, path in modules.items():
        top, fn = _imports(ast.parse(path.read_text()))
        graph[name] = {t for t, _ in top if t.startswith("attention_paths")}
        inner[name] = fn
    return modules, graph, inner


MODULES, GRAPH, INNER = _graph()


def _resolve(target: str) -> str:
    """The package module an import names (``from attention_paths.x import name`` -> ``attention_paths.x``)."""
    while target not in MODULES and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def test_the_layout_has_the_layers():
    assert {_layer(m) for m in MODULES} == set(LAYERS) | {"__init__"}
    assert len(MODULES) >= 35  # one module per job


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_inside_a_function(module):
    found = [(t, line) for t, line in INNER[module] if (_layer(module), t.split(".")[0]) not in FUNCTION_LEVEL]
    assert not found, f"{module} imports inside functions: {found}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers(module):
    layer = _layer(module)
    for target in GRAPH[module]:
        other = _layer(_resolve(target))
        if layer == "__init__":  # the top level is the theory's API: base and theory only
            assert other in ("base", "theory"), f"attention_paths imports {target}"
        elif other == "__init__":
            continue  # the package itself (its __init__ imports base and theory only)
        elif layer in ALLOWED:
            assert other in ALLOWED[layer], f"{module} imports {target} ({other})"
        else:
            below = other in LAYERS and LAYERS[other] < LAYERS[layer] and other not in ALLOWED
            assert other == layer or below, f"{module} ({layer}) imports {target} ({other}), not a layer below"


def test_no_import_cycle():
    edges = {m: {_resolve(t) for t in GRAPH[m]} - {m} for m in MODULES}
    state, stack = {}, []

    def dfs(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(edges[m]):
            if n not in MODULES or n == "attention_paths":
                continue  # every module imports the package's __init__ first; it imports base and theory only
            if state.get(n) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(n) :] + [n]))
            if n not in state:
                dfs(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(MODULES):
        if m not in state:
            dfs(m)


def test_environment_variables_are_read_in_config_only():
    readers = [m for m, p in MODULES.items() if "os.environ" in p.read_text() or "getenv" in p.read_text()]
    assert readers == ["attention_paths.base.config"], readers


def test_jax_starts_only_when_a_sampler_is_used():
    """Importing every layer (the command line included) starts neither JAX nor arviz: JAX must see the CPU
    device count (XLA_FLAGS) that the command line sets before the first sampler call."""
    code = (
        "import sys, attention_paths.__main__, attention_paths.runs.results, attention_paths.tasks.hmc, "
        "attention_paths.sampling as s; assert 'jax' not in sys.modules and 'arviz' not in sys.modules; "
        "s.SamplerConfig; assert 'arviz' in sys.modules and 'jax' not in sys.modules; s.sample_full; "
        "assert 'jax' in sys.modules"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
