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
# the deliberate function-level imports, each with its reason in the code: an optional dependency, and the
# command line's experiments, loaded at dispatch so that --help answers without torch (issue 25)
FUNCTION_LEVEL = {("__main__", "distributed"), ("__main__", "attention_paths")}


def _modules():
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        yield ".".join(["attention_paths", *parts]), f


def _dynamic_import(node) -> str | None:
    """The package module an ``importlib.import_module(...)`` call loads, where it can be read from the code: a
    literal ``"attention_paths.x.y"``, or the constant head of an f-string (``f"attention_paths.theory.{n}"``
    loads a module of ``attention_paths.theory``); None for any other call."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "import_module":
        return None
    arg = node.args[0]
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        arg = ast.Constant(str(arg.values[0].value).rstrip("."))
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("attention_paths"):
        return arg.value
    return None


def _imports(tree):
    """(module-level imports, function-level imports, dynamic imports) of a module, as (target, line).

    A dynamic import (``importlib.import_module`` of a package module, a lazy loader's) is an import like any
    other for the layers and the cycle check; it is not a function-level import (loading lazily is its point)."""
    top, inner, dynamic = [], [], []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            target = _dynamic_import(child)
            if target:
                dynamic.append((target, child.lineno))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if isinstance(child, ast.ImportFrom):
                    assert child.level == 0, f"relative import at line {child.lineno}"
                    base = child.module
                    # `from attention_paths.base import citation` imports the module citation (resolved later)
                    names = [f"{base}.{a.name}" for a in child.names] if base.startswith("attention_paths") else [base]
                else:
                    names = [a.name for a in child.names]
                (inner if nested else top).extend((n, child.lineno) for n in names)
            visit(child, nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return top, inner, dynamic


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _graph():
    modules = dict(_modules())
    graph, inner = {}, {}
    for name, path in modules.items():
        top, fn, dynamic = _imports(ast.parse(path.read_text()))
        graph[name] = {t for t, _ in top + dynamic if t.startswith("attention_paths")}
        inner[name] = fn
    return modules, graph, inner


MODULES, GRAPH, INNER = _graph()


def _resolve(target: str) -> str:
    """The package module an import names (``from attention_paths.x import name`` -> ``attention_paths.x``)."""
    while target not in MODULES and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def test_a_dynamic_import_of_a_package_module_is_an_import():
    """Issue 50: ``importlib.import_module("attention_paths...")`` cannot hide an edge from the checks."""
    code = (
        "import importlib\n"
        "def f():\n    return importlib.import_module('attention_paths.base.provenance')\n"
        "def g(n):\n    return importlib.import_module(f'attention_paths.theory.{n}')\n"
        "def h(m):\n    return importlib.import_module(m)\n"
    )
    top, inner, dynamic = _imports(ast.parse(code))
    assert [t for t, _ in dynamic] == ["attention_paths.base.provenance", "attention_paths.theory"]
    assert [t for t, _ in top] == ["importlib"] and not inner
    # the lazy loaders of the package are seen: its top level loads the theory's modules
    assert "attention_paths.theory" in GRAPH["attention_paths"]
    assert "attention_paths.base.provenance" not in GRAPH["attention_paths.base.citation"]


def test_the_layout_has_the_layers():
    assert {_layer(m) for m in MODULES} == set(LAYERS) | {"__init__"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_says_what_it_is_for(module):
    """Each module opens with a docstring, and each module with public functions or classes lists them in
    ``__all__`` (the private helpers stay behind it)."""
    tree = ast.parse(MODULES[module].read_text())
    assert ast.get_docstring(tree), f"{module} has no docstring"
    public = [
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.ClassDef))
        and not n.name.startswith("_")
        and module != "attention_paths.__main__"
    ]
    names = {
        t.id
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in getattr(n, "targets", [getattr(n, "target", None)])
        if isinstance(t, ast.Name)
    }
    assert not public or "__all__" in names, f"{module} defines {public[:3]}... but no __all__"


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
        "import sys, attention_paths.__main__, attention_paths.runs.results, attention_paths.tasks.markov, "
        "attention_paths.sampling as s; assert 'jax' not in sys.modules and 'arviz' not in sys.modules; "
        "s.SamplerConfig; assert 'arviz' in sys.modules and 'jax' not in sys.modules; s.sample_full; "
        "assert 'jax' in sys.modules"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def _loaded_after(code: str) -> set[str]:
    """The top-level modules loaded by a fresh interpreter that runs ``code``."""
    probe = code + "\nimport sys; print('\\nLOADED', *sorted({m.split('.')[0] for m in sys.modules}))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.rsplit("LOADED", 1)[1].split())


HEAVY = {"torch", "torchvision", "jax", "numpy", "scipy", "dask", "matplotlib", "numpyro", "arviz"}


def test_help_and_argument_errors_answer_without_the_heavy_libraries():
    """Issue 25: ``python -m attention_paths --help`` and a bad argument load none of torch, torchvision,
    JAX, numpy, scipy, dask or matplotlib (the experiments load when they run)."""
    for argv in (["--help"], ["hmc", "--scale", "huge"], ["pruning", "--network", "paper-seed01"]):
        code = f"from attention_paths.__main__ import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
        assert not _loaded_after(code) & HEAVY, argv


def test_the_theory_api_loads_on_first_use_and_never_loads_torchvision():
    import attention_paths as ap

    assert not _loaded_after("import attention_paths") & HEAVY
    loaded = _loaded_after("import attention_paths as ap; ap.Action, ap.path_features, ap.solve")
    assert {"torch", "numpy", "scipy"} <= loaded and "torchvision" not in loaded and "jax" not in loaded
    for name in ap.__all__:  # every public name resolves to the theory's object of that name
        obj = getattr(ap, name)
        assert name == "__version__" or obj.__module__.startswith("attention_paths.theory."), name
    assert set(ap.__all__) <= set(dir(ap))
    with pytest.raises(AttributeError, match="no attribute 'solver_that_is_not'"):
        ap.solver_that_is_not


def test_the_command_lines_experiment_names_are_the_experiments():
    from attention_paths.__main__ import SUBCOMMANDS
    from attention_paths.runs.experiments import EXPERIMENTS

    assert sorted(set(SUBCOMMANDS) - {"omniglot-train", "reproduce", "ensemble"}) == sorted(EXPERIMENTS)


def test_the_training_stages_keys_cover_every_file_training_loads():
    """Issue 25, section 3: the code the train stage is keyed by (derived from the imports) is every package
    file that importing the training code actually loads."""
    from attention_paths.base.provenance import import_closure
    from attention_paths.runs.stages import DATA_CODE, TRAIN_CODE

    code = "import attention_paths.tasks.omniglot.training, attention_paths.tasks.omniglot.members"
    probe = code + "\nimport sys; print(' '.join(m for m in sys.modules if m.startswith('attention_paths')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = set()
    for m in out.stdout.split():
        rel = Path(*m.split(".")[1:])
        loaded.add((rel / "__init__.py").as_posix() if (PACKAGE / rel / "__init__.py").exists() else f"{rel}.py")
    assert loaded == set(TRAIN_CODE)
    assert set(DATA_CODE) < set(TRAIN_CODE) and "tasks/omniglot/data.py" in DATA_CODE
    assert "tasks/oneshot/grid.py" not in TRAIN_CODE  # the analysis does not retrain the network
    with pytest.raises(FileNotFoundError, match="no package file"):
        import_closure("tasks/no_such_module.py")


def test_the_results_format_knows_no_experiment():
    """Issue 25, section 1: ``runs.results`` is the format only (folders, records, digests, version); every
    experiment's reader lives beside its writer in ``tasks`` and is registered in ``runs.experiments``."""
    imported = {_resolve(t) for t in GRAPH["attention_paths.runs.results"]}
    assert {_layer(m) for m in imported} <= {"base"}, imported
    from attention_paths.runs.experiments import EXPERIMENTS

    for name, exp in EXPERIMENTS.items():
        if exp.reader is not None:
            read, summarize = exp.resolve("reader"), exp.resolve("summary")
            assert read.__module__ == summarize.__module__, (name, read.__module__, summarize.__module__)


def test_no_function_is_over_80_lines_and_those_over_60_say_why():
    """Issue 50: a function of the package is at most 80 lines, docstring included, and one of more than 60 says
    in its docstring why it is long (a sentence starting "Long:")."""
    too_long, unexplained = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({n} lines)"
                if n > 80:
                    too_long.append(where)
                elif n > 60 and "Long:" not in (ast.get_docstring(node) or ""):
                    unexplained.append(where)
    assert not too_long, f"functions over 80 lines: {too_long}"
    assert not unexplained, f"functions over 60 lines without a 'Long:' reason in their docstring: {unexplained}"
