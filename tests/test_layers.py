"""The import graph of langclass/ has no cycle and never runs up the stages (issues 12 and 26).

Stages, lowest first (docs/architecture.md draws them); the folder list of core/ and app/ reads
like the data flow:

    version ← core.base ← core.automata ← core.logic ← core.ingest ← core.algebra ← core.synthesis
            ← core.precision ← core.classification ← core.drawing ← core.census ← core (root)
            ← models.nn ← models.construct ← models.training ← models.experiments ← models (root)
            ← {app.errors, app.settings} ← app.store ← app.execution ← app.usecases
            ← {app.web, app.cli, api} ← {app.main, langclass}

Between sibling packages the allowed directions are named explicitly (``SIBLING_IMPORTS``): in models,
construct and training both build on nn and never on each other, experiments on training and nn.

Every ``import`` / ``from … import`` of a langclass module is read from the source with ``ast`` —
module-level and inside functions alike (a lazy import that runs upward is still a dependency that
runs upward). A module may import from its own stage or any lower one; the graph of module-level
imports must be acyclic, and so must the graph of all imports across different modules. Every
module of core/ and app/ lies in a stage folder except the few named on top of each.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "langclass"

# (layer number, name, module-name prefixes); the longest matching prefix decides
LAYERS: list[tuple[int, str, tuple[str, ...]]] = [
    (0, "version", ("langclass.version",)),
    (1, "core.base: errors, limits, input checks, wording", ("langclass.core.base",)),
    (2, "core.automata: DFAs, minimization, graphs, words, export", ("langclass.core.automata",)),
    (3, "core.logic: formulas and B-RASP programs", ("langclass.core.logic",)),
    (4, "core.ingest: sources read into the canonical DFA", ("langclass.core.ingest",)),
    (5, "core.algebra: monoid, Green's structure, class deciders, lattice", ("langclass.core.algebra",)),
    (6, "core.synthesis: formulas and programs from automata", ("langclass.core.synthesis",)),
    (7, "core.precision: floats, rotation tables, the encoding choice", ("langclass.core.precision",)),
    (8, "core.classification: analyze, the entry of classification", ("langclass.core.classification",)),
    (9, "core.drawing: pictures of a language", ("langclass.core.drawing",)),
    (10, "core.census: shards, census runs, samples", ("langclass.core.census",)),
    (11, "core package root", ("langclass.core",)),
    (12, "models.nn: tokens, encodings, attention, the recognizer", ("langclass.models.nn",)),
    (13, "models.construct: plans, assembly, routes, verification", ("langclass.models.construct",)),
    (14, "models.training: data, specs, footprint, trainers, evaluation", ("langclass.models.training",)),
    (15, "models.experiments: experiments, sweeps, sectors, reports", ("langclass.models.experiments",)),
    (15, "models.portable: the portable model format, its standalone runner, export and load", ("langclass.models.portable",)),
    (16, "models package root", ("langclass.models",)),
    (17, "app on top: the service's errors and settings", ("langclass.app.errors", "langclass.app.settings")),
    (18, "app.store: tables, database, cursors, repositories", ("langclass.app.store",)),
    (19, "app.execution: isolation, the request runner, workers, executors", ("langclass.app.execution",)),
    (20, "app.usecases: classification records, experiments, response models, plots", ("langclass.app.usecases",)),
    (21, "interfaces: app.web, app.cli, the Python API", ("langclass.app.web", "langclass.app.cli", "langclass.api")),
    (22, "entry points: the app factory and the package roots", ("langclass.app.main", "langclass.app", "langclass")),
]

# the modules allowed directly in core/ and app/ (every other one lies in a stage folder)
ON_TOP = {
    "langclass.core": set(),
    "langclass.app": {"errors", "settings", "main"},
    "langclass.models": set(),
}

# every import between two stage packages of core or models that the layer numbers allow must be
# one of these (importer stage, imported stage): the sibling stages of models (construct, training)
# import nn and never each other; experiments imports training and nn
SIBLING_IMPORTS: dict[str, set[tuple[str, str]]] = {
    "langclass.models": {("construct", "nn"), ("training", "nn"), ("experiments", "training"), ("experiments", "nn")},
    "langclass.core": {("classification", s) for s in ("base", "automata", "logic", "ingest", "algebra", "synthesis", "precision")}
    | {("drawing", s) for s in ("base", "automata", "algebra")}
    | {("census", s) for s in ("base", "automata", "algebra")},
}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (p, is_pkg)
    return out


MODULES = _modules()


def layer_of(module: str) -> int:
    best = None
    for num, _, prefixes in LAYERS:
        for pre in prefixes:
            if module == pre or module.startswith(pre + "."):
                if best is None or len(pre) > best[1]:
                    best = (num, len(pre))
    assert best is not None, f"module {module} has no layer: add it to LAYERS (and docs/architecture.md)"
    return best[0]


def imports_of(module: str) -> list[tuple[str, int, bool]]:
    """``(imported module, line, at module level)`` for every langclass import of ``module``."""
    path, is_pkg = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    for n in tree.body:  # imports under module-level if/try blocks run at import time too
        if isinstance(n, (ast.If, ast.Try)):
            top |= {id(c) for c in ast.walk(n)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = module.split(".") if is_pkg else module.split(".")[:-1]
            if node.level:
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("langclass"):
                continue
            for alias in node.names:
                cand = f"{target}.{alias.name}"
                out.append((cand if cand in MODULES else target, node.lineno, id(node) in top))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("langclass"):
                    out.append((alias.name, node.lineno, id(node) in top))
    return [(t, ln, lvl) for t, ln, lvl in out if t != module and t in MODULES]


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_module_has_a_layer() -> None:
    for m in MODULES:
        layer_of(m)


def test_no_import_runs_up_the_layers() -> None:
    bad = []
    for m, deps in GRAPH.items():
        for t, line, _ in deps:
            if layer_of(t) > layer_of(m):
                bad.append(f"{m}:{line} imports {t} (layer {layer_of(m)} → {layer_of(t)})")
    # a package's __init__ may re-export its own submodules
    bad = [b for b in bad if not _is_own_package(b)]
    assert not bad, "imports that run up the layers:\n" + "\n".join(bad)


def _is_own_package(line: str) -> bool:
    m, rest = line.split(":", 1)
    t = rest.split(" imports ", 1)[1].split(" ", 1)[0]
    return MODULES.get(m, (None, False))[1] and t.startswith(m + ".")


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        color[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if color.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in color:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        color[u] = 2
        return None

    for u in sorted(edges):
        if u not in color:
            found = visit(u)
            if found:
                return found
    return None


def _edges(module_level_only: bool) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for m, deps in GRAPH.items():
        for t, _, top in deps:
            if module_level_only and not top:
                continue
            if MODULES[m][1] and t.startswith(m + "."):
                continue  # a package re-exporting its submodules
            if MODULES[t][1] and m.startswith(t + "."):
                continue  # a submodule importing a sibling through its package
            edges.setdefault(m, set()).add(t)
    return edges


@pytest.mark.parametrize("module_level_only", [True, False], ids=["module-level", "all-imports"])
def test_no_import_cycle(module_level_only: bool) -> None:
    cyc = _cycle(_edges(module_level_only))
    assert cyc is None, "import cycle: " + " → ".join(cyc)


def test_core_and_app_rooms_lie_in_stage_folders() -> None:
    for pkg, allowed in ON_TOP.items():
        folder = ROOT / Path(*pkg.split("."))
        loose = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        assert loose == allowed, f"{pkg}: modules outside a stage folder: {sorted(loose - allowed)}; missing: {sorted(allowed - loose)}"


def _stage_of(module: str, root: str) -> str | None:
    rest = module[len(root) + 1:] if module.startswith(root + ".") else None
    return rest.split(".")[0] if rest else None


@pytest.mark.parametrize("root", sorted(SIBLING_IMPORTS))
def test_imports_between_stage_packages_run_only_the_named_ways(root: str) -> None:
    """The direction of every import between the stage packages of core and models (issue 31)."""
    allowed, seen, bad = SIBLING_IMPORTS[root], set(), []
    for m, deps in GRAPH.items():
        a = _stage_of(m, root)
        for t, line, _ in deps:
            b = _stage_of(t, root)
            if a is None or b is None or a == b or (root == "langclass.core" and a in ORDERED_CORE and b in ORDERED_CORE
                                                       and ORDERED_CORE.index(b) < ORDERED_CORE.index(a)):
                continue
            seen.add((a, b))
            if (a, b) not in allowed:
                bad.append(f"{m}:{line} imports {t} ({a} → {b})")
    assert not bad, "imports between stage packages that run a way not named in SIBLING_IMPORTS:\n" + "\n".join(bad)
    # the named ways are real (a stale entry would let a future upward import hide)
    assert seen <= allowed and (root != "langclass.models" or seen == allowed), (seen, allowed)


# the stages of core below classification form a chain: each may import every one before it
ORDERED_CORE = ["base", "automata", "logic", "ingest", "algebra", "synthesis", "precision"]


def test_the_models_and_core_rooms() -> None:
    """models/ has at most 8 entries besides __init__.py; core/ has no loose module and at most 10 packages."""
    models = [p for p in (PKG / "models").iterdir() if p.name != "__init__.py" and not p.name.startswith((".", "__pycache__"))]
    assert len(models) <= 8, sorted(p.name for p in models)
    core = [p for p in (PKG / "core").iterdir() if not p.name.startswith((".", "__pycache__"))]
    assert [p.name for p in core if p.is_file() and p.name != "__init__.py"] == []
    assert len([p for p in core if p.is_dir()]) <= 10


def test_every_stage_package_says_what_it_is_and_may_import() -> None:
    stages = [m for m in MODULES if MODULES[m][1] and m.count(".") == 2 and m.split(".")[1] in ("core", "app", "models")]
    assert len(stages) >= 19, stages
    for m in stages:
        doc = ast.get_docstring(ast.parse(MODULES[m][0].read_text(encoding="utf-8"))) or ""
        first = doc.splitlines()[0] if doc else ""
        assert "Stage" in first and "import" in first, f"{m}: the first docstring line names the stage and what it may import"


def test_the_stages_run_in_data_flow_order() -> None:
    order = ["langclass.core.base.errors", "langclass.core.automata.automaton", "langclass.core.logic.formulas",
             "langclass.core.ingest.parse", "langclass.core.algebra.monoid", "langclass.core.synthesis.fo_mod",
             "langclass.core.precision.numerics", "langclass.core.classification.analysis", "langclass.models.training.train",
             "langclass.app.settings", "langclass.app.store.db", "langclass.app.execution.worker",
             "langclass.app.usecases.service", "langclass.app.web.routes", "langclass.app.main"]
    layers = [layer_of(m) for m in order]
    assert layers == sorted(layers) and len(set(layers)) == len(layers), list(zip(order, layers))
    assert layer_of("langclass.app.cli.commands") == layer_of("langclass.app.web.pages")


def test_the_walker_sees_cycles_and_upward_imports() -> None:
    """The checks above are real: a planted cycle and a planted upward import are found."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None
    assert layer_of("langclass.core.classification.analysis") < layer_of("langclass.models.training.train") < layer_of("langclass.app.store.jobs")
    assert layer_of("langclass.app.store.jobs") < layer_of("langclass.app.usecases.service") < layer_of("langclass.app.cli.jobs")
    assert layer_of("langclass.app.execution.worker") < layer_of("langclass.app.main")
    assert any(t == "langclass.core.automata.automaton" for t, _, _ in GRAPH["langclass.core.classification.analysis"])


def _loaded_after(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    return set(out.stdout.split())


def test_worker_loads_no_web_framework_and_analysis_no_torch() -> None:
    worker = _loaded_after("langclass.app.execution.worker")
    assert "langclass.app.execution.worker" in worker
    assert not {"fastapi", "starlette"} & worker, sorted({"fastapi", "starlette"} & worker)
    analysis = _loaded_after("langclass.core.classification.analysis")
    assert "langclass.core.classification.analysis" in analysis
    assert not {"torch", "fastapi", "sqlalchemy"} & analysis
    root = _loaded_after("langclass")
    assert not {"torch", "fastapi", "sqlalchemy", "numpy"} & root


def test_core_errors_know_no_http_and_the_app_maps_every_class_to_a_status() -> None:
    """HTTP statuses live in the app layer (app/errors.py), not on core's error classes."""
    from langclass.app.errors import http_status, problem_dict
    from langclass.app.web.problems import problem_catalogue
    from langclass.core.base import errors as core_errors

    core_classes = [c for c in vars(core_errors).values()
                    if isinstance(c, type) and issubclass(c, core_errors.LangclassError)]
    assert len(core_classes) >= 10
    assert [c.__name__ for c in core_classes if hasattr(c, "status")] == []
    assert "status" not in core_errors.RegexSyntaxError("x").to_dict()
    assert http_status(core_errors.RegexSyntaxError) == 422 and http_status(core_errors.TimeLimitExceeded) == 422
    assert http_status(core_errors.LangclassError("x")) == 400
    assert list(problem_dict(core_errors.LimitExceeded("max_states", 5)))[:4] == ["code", "title", "status", "detail"]
    from langclass.app.errors import ConflictError, NotFoundError

    assert http_status(NotFoundError("x")) == 404 and http_status(ConflictError) == 409
    assert {code: p["status"] for code, p in problem_catalogue().items() if p["status"] < 400} == {}


MAX_MODULE_LINES = 650
# modules allowed over the limit while their split is under way; each entry must still be over it
# (the test fails once one is split, so the exception cannot outlive the split)
OVERSIZE_PENDING: dict[str, str] = {}


def test_no_module_is_over_the_line_limit() -> None:
    """One concept per module: no module in langclass/ exceeds MAX_MODULE_LINES lines (issue 12)."""
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in PKG.rglob("*.py")}
    over = {m: n for m, n in sizes.items() if n > MAX_MODULE_LINES and m not in OVERSIZE_PENDING}
    assert over == {}, f"split these modules along a concept seam: {over}"
    stale = [m for m in OVERSIZE_PENDING if sizes.get(m, 0) <= MAX_MODULE_LINES]
    assert stale == [], f"split done: remove {stale} from OVERSIZE_PENDING"


def _unbound_names(path: Path, root: Path = ROOT) -> list[str]:
    """Names a module reads that nothing in it binds (import, def, class, assignment, argument,
    except/with/for target) and that are not builtins: a lost import after a move or a rebase."""
    import builtins

    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__path__"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound |= set(node.names)
    read = {n.id: n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return [f"{path.relative_to(root)}:{line} {name}" for name, line in sorted(read.items()) if name not in bound]


def test_no_module_reads_a_name_it_never_binds() -> None:
    """Catches an import lost when code moves between modules (a NameError only when that line runs)."""
    unbound = [u for p in sorted(PKG.rglob("*.py")) for u in _unbound_names(p)]
    assert unbound == []


def test_the_unbound_name_check_sees_a_lost_import(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("import json\n\ndef f(x):\n    return re.sub('a', 'b', json.dumps(x))\n", encoding="utf-8")
    assert _unbound_names(mod, tmp_path) == ["m.py:4 re"]
