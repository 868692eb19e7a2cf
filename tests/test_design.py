"""The rules docs/design.md states, checked on the package's source
(``jaxnn/``; bench/ and tests/ are not the package), and the one
implementation of each posterior formula checked in both array namespaces
against the float64 reference (tests/reference.py).

Each rule reads every module with :mod:`ast`:

* no module uses another module's private (underscored) names — neither
  ``from jaxnn._src.m import _name`` nor ``m._name`` of an imported jaxnn
  module (a module's own privates are its business; a private *module*,
  such as ``jaxnn._src``, is a path, not a name);
* platform names — the strings "cpu", "gpu", "tpu", "cuda", "rocm",
  ``jax.default_backend()`` and a device's ``.platform`` — appear only in
  ``platforms.py`` (the :data:`PLATFORM_ALLOWED` few say why), and the
  platform rules that make engine decisions are read only by the plan;
* the boosting engines (:data:`ENGINES`) are run only by ``boost_runs.py``
  (and called within their own modules).
"""

from __future__ import annotations

import ast
import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jaxnn"

sys.path.insert(0, os.path.dirname(__file__))
import reference as R  # noqa: E402

PLATFORM_NAMES = {"cpu", "gpu", "tpu", "cuda", "rocm"}

#: (file, source) of the platform names outside platforms.py that are no
#: layout rule, each with the reason
PLATFORM_ALLOWED = {
    ("jaxnn/_src/cli.py", "jax.default_backend()"):
        "the demo's summary line names the backend it ran on; nothing reads it",
    ("jaxnn/_src/sklearn.py", "ref.platform"):
        "the estimator pickles its devices as (platform, id) and finds them again: device identity",
    ("jaxnn/_src/sklearn.py", "d.platform"):
        "the estimator pickles its devices as (platform, id) and finds them again: device identity",
}

#: the platform rules that decide how a fit runs: read by the plan alone
#: (plan.make_plan), every engine then takes the plan's decision
PLAN_RULES = ("narrows_steps", "runs_windows", "colored_by_default")

#: the boosting engines (module, jitted function): run by boost_runs.py only
ENGINES = (
    ("jaxnn._src.boosting", "boost"),
    ("jaxnn._src.window", "boost_windowed"),
    ("jaxnn._src.schedule", "boost_colored"),
)
ENGINE_RUNNER = "jaxnn._src.boost_runs"


class Module:
    """One source file of the package: its dotted name, tree, and the
    jaxnn modules and objects its imports bind to local names."""

    def __init__(self, path: pathlib.Path, root: pathlib.Path, modules: set):
        self.path = path
        self.rel = path.relative_to(root).as_posix()
        parts = list(path.relative_to(root).with_suffix("").parts)
        self.is_package = parts[-1] == "__init__"
        if self.is_package:
            parts = parts[:-1]
        self.name = ".".join(parts)
        self.source = path.read_text()
        self.tree = ast.parse(self.source, filename=str(path))
        self.modules = modules
        self.bound_modules = {}  # local name → jaxnn module
        self.bound_objects = {}  # local name → (jaxnn module, name)
        self.imported = []  # (node, jaxnn module, name) of every `from m import name`
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] != "jaxnn":
                        continue
                    if alias.asname:
                        self.bound_modules[alias.asname] = alias.name
                    else:
                        self.bound_modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                source = self._resolve(node)
                if source is None or source.split(".")[0] != "jaxnn":
                    continue
                for alias in node.names:
                    local = alias.asname or alias.name
                    if f"{source}.{alias.name}" in modules:
                        self.bound_modules[local] = f"{source}.{alias.name}"
                    else:
                        self.bound_objects[local] = (source, alias.name)
                        self.imported.append((node, source, alias.name))

    def _resolve(self, node: ast.ImportFrom):
        if not node.level:
            return node.module
        base = self.name.split(".")
        if not self.is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def segment(self, node) -> str:
        return ast.get_source_segment(self.source, node)

    def module_of(self, node):
        """The jaxnn module an expression names (``m``, ``jaxnn._src.m``), or None."""
        if isinstance(node, ast.Name):
            return self.bound_modules.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.module_of(node.value)
            if base is not None and f"{base}.{node.attr}" in self.modules:
                return f"{base}.{node.attr}"
        return None

    def object_of(self, node):
        """(module, name) of the jaxnn object an expression names, or None."""
        if isinstance(node, ast.Name):
            return self.bound_objects.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.module_of(node.value)
            if base is not None and f"{base}.{node.attr}" not in self.modules:
                return base, node.attr
        return None

    def docstrings(self) -> set:
        """ids of the docstring constants (modules, classes, functions)."""
        out = set()
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                        and isinstance(first.value.value, str):
                    out.add(id(first.value))
        return out


def _modules(package=PACKAGE) -> list:
    paths = sorted(package.rglob("*.py"))
    names = set()
    for path in paths:
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return [Module(path, package.parent, names) for path in paths]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(modules) -> list:
    """'file:line: source' of every use of another jaxnn module's private name."""
    found = []
    for mod in modules:
        for node, source, name in mod.imported:
            if source != mod.name and _private(name):
                found.append(f"{mod.rel}:{node.lineno}: from {source} import {name}")
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                owner = mod.module_of(node.value)
                if owner is not None and owner != mod.name and f"{owner}.{node.attr}" not in mod.modules:
                    found.append(f"{mod.rel}:{node.lineno}: {mod.segment(node)}")
    return found


def platform_uses(modules) -> list:
    """(file, line, source) of every platform name outside platforms.py: a
    platform string, ``default_backend()``, or ``.platform`` of anything but
    the platforms module and the plan (whose field says where a run computes)."""
    found = []
    for mod in modules:
        if mod.name == "jaxnn._src.platforms":
            continue
        docstrings = mod.docstrings()
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if node.value.strip().lower() in PLATFORM_NAMES:
                    found.append((mod.rel, node.lineno, mod.segment(node)))
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) \
                    and getattr(node.func, "attr", getattr(node.func, "id", None)) == "default_backend":
                found.append((mod.rel, node.lineno, mod.segment(node)))
            elif isinstance(node, ast.Attribute) and node.attr == "platform":
                base = node.value
                of_plan = (isinstance(base, ast.Name) and base.id == "plan") or \
                          (isinstance(base, ast.Attribute) and base.attr == "plan")
                if not of_plan and mod.module_of(base) != "jaxnn._src.platforms":
                    found.append((mod.rel, node.lineno, mod.segment(node)))
    return found


def plan_rule_uses(modules) -> list:
    """'file:line: source' of every reference to a :data:`PLAN_RULES` rule outside plan.py."""
    found = []
    for mod in modules:
        if mod.name in ("jaxnn._src.plan", "jaxnn._src.platforms"):
            continue
        for node in ast.walk(mod.tree):
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                target = mod.object_of(node)
                if target is not None and target[0] == "jaxnn._src.platforms" and target[1] in PLAN_RULES:
                    found.append(f"{mod.rel}:{node.lineno}: {mod.segment(node)}")
    return found


def engine_uses(modules) -> list:
    """'file:line: source' of every reference to an engine of :data:`ENGINES`
    outside boost_runs.py and the engine's own module."""
    found = []
    for mod in modules:
        if mod.name == ENGINE_RUNNER:
            continue
        for node in ast.walk(mod.tree):
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                target = mod.object_of(node)
                if target in ENGINES and target[0] != mod.name:
                    found.append(f"{mod.rel}:{node.lineno}: {mod.segment(node)}")
    return found


@pytest.fixture(scope="module")
def modules():
    return _modules()


def test_no_module_uses_another_modules_private_names(modules):
    assert len(modules) > 40  # every module of the package read
    assert private_uses(modules) == []


def test_the_private_name_rule_sees_imports_and_attributes(tmp_path):
    """The rule's own check: `from m import _x`, `m._x` of an imported module,
    in a function body too, are found; a module's own privates, a private
    module path and dunder names are not."""
    pkg = tmp_path / "jaxnn"
    (pkg / "_src").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from jaxnn._src import a as _a\nfrom jaxnn import __version__\n")
    (pkg / "_src" / "__init__.py").write_text("")
    (pkg / "_src" / "a.py").write_text("def _own():\n    return 1\n\nx = _own()\n")
    (pkg / "_src" / "b.py").write_text(
        "from jaxnn._src.a import _own\n"
        "from jaxnn._src import a\n"
        "def f():\n"
        "    from jaxnn._src import a as other\n"
        "    return a._own() + other._own()\n")
    found = private_uses(_modules(pkg))
    assert sorted(f.split(": ", 1)[1] for f in found) == ["a._own", "from jaxnn._src.a import _own", "other._own"]


def test_platform_names_only_in_platforms(modules):
    found = platform_uses(modules)
    unexplained = [f"{path}:{line}: {src}" for path, line, src in found if (path, src) not in PLATFORM_ALLOWED]
    assert unexplained == []
    assert {(path, src) for path, _, src in found} == set(PLATFORM_ALLOWED)  # no stale exception


def test_the_platform_rule_sees_strings_backends_and_device_platforms(tmp_path):
    pkg = tmp_path / "jaxnn"
    (pkg / "_src").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_src" / "__init__.py").write_text("")
    (pkg / "_src" / "platforms.py").write_text("def platform():\n    return 'cpu'\n")
    (pkg / "_src" / "c.py").write_text(
        '"""Runs on a "cpu" (a docstring)."""\n'
        "import jax\n"
        "from jaxnn._src import platforms\n"
        "def f(device, plan):\n"
        "    return (device.platform == 'gpu', jax.default_backend(), platforms.platform(), plan.platform)\n")
    assert sorted(src for _, _, src in platform_uses(_modules(pkg))) == ["'gpu'", "device.platform",
                                                                         "jax.default_backend()"]


def test_the_plan_alone_reads_the_engine_platform_rules(modules):
    assert plan_rule_uses(modules) == []


def test_boosting_engines_run_only_in_boost_runs(modules):
    by_name = {mod.name: mod for mod in modules}
    for module, name in ENGINES:  # the engines exist under these names (a renamed engine fails here)
        assert any(isinstance(node, ast.FunctionDef) and node.name == name for node in by_name[module].tree.body), \
            (module, name)
    runner = by_name[ENGINE_RUNNER]
    assert {runner.object_of(node) for node in ast.walk(runner.tree)
            if isinstance(node, (ast.Name, ast.Attribute))} >= set(ENGINES)  # the runner runs each
    assert engine_uses(modules) == []


def test_the_engine_rule_sees_imported_and_attribute_calls(tmp_path):
    pkg = tmp_path / "jaxnn"
    (pkg / "_src").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_src" / "__init__.py").write_text("")
    (pkg / "_src" / "boosting.py").write_text("def boost():\n    return 0\n\ndef again():\n    return boost()\n")
    (pkg / "_src" / "boost_runs.py").write_text("from jaxnn._src.boosting import boost\nx = boost()\n")
    (pkg / "_src" / "select.py").write_text(
        "from jaxnn._src import boosting\n"
        "from jaxnn._src.boosting import boost as run\n"
        "def f():\n"
        "    return boosting.boost(), run()\n")
    assert sorted(f.split(": ", 1)[1] for f in engine_uses(_modules(pkg))) == ["boosting.boost", "run"]


# --------------------------------------------------------------------------
# one implementation of each formula, in both namespaces
# --------------------------------------------------------------------------


def _scores(n=64, C=5, seed=0):
    rng = np.random.default_rng(seed)
    H = rng.normal(scale=3.0, size=(n, C))
    H[:4, :2] = 2.5  # exact ties between two classes
    top = np.argmax(H, axis=1)
    D = rng.random((n, 7)) * 4.0
    D[:3] = 1.5  # every gap 0: the kernel weights are uniform
    labels = rng.random((n, 7, C)) < 0.35
    return H, top, D, labels


@pytest.mark.parametrize("kernel", [False, True])
def test_posterior_formula_is_one_in_numpy_and_jax(kernel):
    """calibration.calibrated_posterior: float64 NumPy and traced float32 both
    the reference posteriors (ties toward the predicted class), and the host
    log probabilities and log losses the same formula."""
    import jax.numpy as jnp

    from jaxnn._src import calibration as cal

    H, top, D, labels = _scores()
    G = 1.5 * R.kernel_log_votes(D, labels, 1.0) if kernel else None
    want = R.calibrated_posteriors(H, 0.7, top, G)
    p64 = cal.calibrated_posterior(H, 0.7, top, False, G, xp=np)
    assert p64.dtype == np.float64 and list(np.argmax(p64, axis=1)) == list(top)
    np.testing.assert_allclose(p64, want, rtol=1e-12)
    Gj = None if G is None else jnp.asarray(G, jnp.float32)
    p32 = cal.calibrated_posterior(jnp.asarray(H, jnp.float32), 0.7, jnp.asarray(top), False, Gj)
    assert p32.dtype == jnp.float32 and list(np.argmax(np.asarray(p32), axis=1)) == list(top)
    np.testing.assert_allclose(np.asarray(p32), want, rtol=2e-5)
    log_p, log_q = cal.calibrated_log_probs(H, 0.7, False, G, top if kernel else None)
    np.testing.assert_allclose(np.exp(log_p), R.calibrated_posteriors(H, 0.7, top if kernel else None, G), rtol=1e-12)
    np.testing.assert_allclose(np.exp(log_q), 1 - np.exp(log_p), rtol=1e-12)
    target = np.eye(H.shape[1])[(top + np.arange(H.shape[0])) % H.shape[1]]  # some true classes are not top
    Ts = np.array([0.05, 0.7, 3.0, 40.0])
    want_losses = [-np.mean(np.log(np.sum(target * R.calibrated_posteriors(H, T, top if kernel else None, G), 1)))
                   for T in Ts]
    np.testing.assert_allclose(cal.log_losses(H, target, Ts, False, None, G, top if kernel else None), want_losses,
                               rtol=1e-12)


def test_multilabel_posterior_formula_is_one_in_numpy_and_jax():
    import jax.numpy as jnp

    from jaxnn._src import calibration as cal

    H = np.random.default_rng(1).normal(scale=50.0, size=(40, 4))
    want = R.calibrated_posteriors(H, 2.0, multilabel=True)
    np.testing.assert_allclose(cal.calibrated_posterior(H, 2.0, None, True, xp=np), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(cal.calibrated_posterior(jnp.asarray(H, jnp.float32), 2.0, None, True)),
                               want, rtol=2e-6)


def test_kernel_vote_is_one_in_numpy_and_jax():
    """calibration.kernel_log_votes: float64 NumPy from the neighbours' labels,
    and traced float32 gathering them from (Y, indices) with k traced among
    more columns, both the reference log(κ + δ)."""
    import jax
    import jax.numpy as jnp

    from jaxnn._src import calibration as cal

    _, _, D, labels = _scores()
    n, k, C = labels.shape
    for b in (0.25, 1.0, 4.0):
        want = R.kernel_log_votes(D, labels, b)
        np.testing.assert_allclose(cal.kernel_log_votes(D, labels, b), want, rtol=1e-12, atol=1e-12)
        # the same labels as training rows: neighbour t of query i is training row i·k + t, two more columns beyond k
        Y = np.where(labels.reshape(n * k, C), 1.0, -1.0).astype(np.float32)
        idx = np.concatenate([np.arange(n * k).reshape(n, k), np.zeros((n, 2), int)], axis=1)
        wider = np.concatenate([D, np.full((n, 2), 9.0)], axis=1).astype(np.float32)
        got = jax.jit(lambda D, Y, idx, kk: cal.kernel_log_votes(D, (Y, idx), b, kk, xp=jnp))(
            jnp.asarray(wider), jnp.asarray(Y), jnp.asarray(idx), jnp.int32(k))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_shrunk_scores_are_the_scores_of_the_shrunk_leverages():
    """(1 − s)·H + s·ā·V is H of the leverages (1 − s)·α + s·ā (V: H at α ≡ 1)."""
    from jaxnn._src.calibration import shrunk_scores
    from jaxnn._src.leverage import shrunk_leverage

    rng = np.random.default_rng(2)
    alpha, Y = rng.random((30, 3)), np.where(rng.random((30, 3)) < 0.4, 1.0, -1.0)
    nb = rng.integers(0, 30, (12, 5))
    H, V = np.sum((alpha * Y)[nb], axis=1), np.sum(Y[nb], axis=1)
    for s in (0.0, 0.3, 1.0):
        want = np.sum((np.asarray(shrunk_leverage(alpha, s, 0.8)) * Y)[nb], axis=1)
        np.testing.assert_allclose(shrunk_scores(H, V, s, 0.8), want, rtol=1e-12, atol=1e-12)
