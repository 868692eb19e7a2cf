"""UDT (paper 004, Algorithm 3): splits against scikit-learn and a float64
NumPy computation of A_φ (eq. 104), the leaves of eq. 106 and the linearised
tree of Theorem 4's proof, max_leaf_nodes, max_bins, multilabel data, no
recompilation, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import jaxnn
from jaxnn._src import udt as U

sklearn_tree = pytest.importorskip("sklearn.tree")

FEATURE_THRESHOLD = 1e-7

#: two splits of a node of n examples tie when their n·G differ by less than
#: TIE·n (float64): well above the float32 rounding of A_φ (~1e-7·n·G·a few)
TIE = 2e-6


# --------------------------------------------------------------------------
# float64 reference
# --------------------------------------------------------------------------


def phi64(name, p):
    p = np.asarray(p, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "squared":
            return p * p - p
        if name == "logistic":
            return np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0) + np.where(
                p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1)), 0)
        if name == "matsushita":
            return -np.sqrt(p * (1 - p))
        if name == "phi_power(0.5)":
            return -((p * (1 - p)) ** 0.5)
    raise KeyError(name)


def b64(name):
    return phi64(name, 0.0) - phi64(name, 0.5)


def G64(name, counts, n):
    """Σ_c (−φ(p_c)) for counts (…, C) of n (…) examples."""
    return -np.sum(phi64(name, counts / n[..., None]), axis=-1)


def candidates(name, X, Ypos, min_leaf=1):
    """Every split of the rows (X (n, d) float32, Ypos (n, C) 0/1): arrays
    (weighted children impurity n_L G_L + n_R G_R, feature, float64 midpoint)."""
    n = X.shape[0]
    imps, feats, thrs = [], [], []
    for f in range(X.shape[1]):
        order = np.argsort(X[:, f], kind="stable")
        x = X[order, f].astype(np.float64)
        cl = np.cumsum(Ypos[order], axis=0)[:-1]
        nl = np.arange(1, n, dtype=np.float64)
        ok = (x[1:] > (X[order, f][:-1] + np.float32(FEATURE_THRESHOLD)).astype(np.float64))
        ok &= (nl >= min_leaf) & (n - nl >= min_leaf)
        imp = nl * G64(name, cl, nl) + (n - nl) * G64(name, Ypos.sum(0) - cl, n - nl)
        imps.append(imp[ok])
        feats.append(np.full(ok.sum(), f))
        thrs.append((x[:-1][ok] + x[1:][ok]) / 2.0)
    return np.concatenate(imps), np.concatenate(feats), np.concatenate(thrs)


def positives(y):
    classes = np.unique(y)
    return (y[:, None] == classes[None, :]).astype(np.float64)


def compare_trees(model, tree, X, Ypos, name, min_leaf=1, node=0, sk=0, tally=None):
    """Walk our tree and scikit-learn's together: equal sizes, leafness,
    feature and threshold, except below a node where the two best splits tie
    (float64 gap < TIE·n): counted in tally["ties"], that subtree not compared."""
    tally = {"ties": 0, "nodes": 0} if tally is None else tally
    rows = _rows_of(tree, X, sk)
    n = rows.sum()
    assert model.n_samples[node] == tree.n_node_samples[sk] == n
    sk_leaf = tree.children_left[sk] < 0
    if not sk_leaf:
        imp, _, _ = candidates(name, X[rows], Ypos[rows], min_leaf)
        best2 = np.sort(imp)[:2]
        if best2.size == 2 and best2[1] - best2[0] < TIE * n:
            tally["ties"] += 1
            return tally
    tally["nodes"] += 1
    assert (model.feature[node] < 0) == sk_leaf, f"node {node}: leafness differs"
    if sk_leaf:
        return tally
    assert model.feature[node] == tree.feature[sk], f"node {node}"
    np.testing.assert_allclose(model.threshold[node], tree.threshold[sk], rtol=2e-7, atol=1e-12)
    assert np.float32(model.threshold[node]) <= tree.threshold[sk]  # the float32 floor of the midpoint
    compare_trees(model, tree, X, Ypos, name, min_leaf, model.left[node], tree.children_left[sk], tally)
    compare_trees(model, tree, X, Ypos, name, min_leaf, model.right[node], tree.children_right[sk], tally)
    return tally


def best_first_ties(tree, X, Ypos, name, min_leaf):
    """Whether a split node of scikit-learn's tree has two best splits that
    tie, or two nodes (split or splittable leaves) best A_φ that tie (TIE·m)."""
    best = []
    m = X.shape[0]
    for sk in range(tree.node_count):
        rows = _rows_of(tree, X, sk)
        imp, _, _ = candidates(name, X[rows], Ypos[rows], min_leaf)
        c = Ypos[rows].sum(0)
        if imp.size == 0 or np.all((c == 0) | (c == rows.sum())):
            continue
        two = np.sort(imp)[:2]
        if tree.children_left[sk] >= 0 and two.size == 2 and two[1] - two[0] < TIE * m:
            return True
        best.append(two[0] - rows.sum() * G64(name, c, np.float64(rows.sum())))
    best = np.sort(best)
    return bool(np.any(np.diff(best) < TIE * m))


def _rows_of(tree, X, sk):
    path = tree.decision_path(X.astype(np.float32))
    return np.asarray(path[:, sk].todense()).ravel() > 0


@pytest.fixture(scope="module")
def data():
    out = {}
    for name in ("pima", "wine", "iris", "bupa", "wdbc", "ionosphere"):
        X, y = jaxnn.datasets.load(name)
        out[name] = (X.astype(np.float32), y)
    return out


def check_equal(data, dataset, criterion, depth, min_leaf=1, max_leaf_nodes=None):
    X, y = data[dataset]
    loss = {"gini": "squared", "entropy": "logistic"}[criterion]
    model = jaxnn.udt(X, y, loss=loss, max_depth=depth, min_samples_leaf=min_leaf, max_leaf_nodes=max_leaf_nodes,
                      posterior="link")  # scikit-learn's predict_proba: the leaves' frequencies
    clf = sklearn_tree.DecisionTreeClassifier(criterion=criterion, max_depth=depth, min_samples_leaf=min_leaf,
                                              max_leaf_nodes=max_leaf_nodes, random_state=0).fit(X, y)
    if max_leaf_nodes is not None and best_first_ties(clf.tree_, X, positives(y), loss, min_leaf):
        return {"ties": 1, "nodes": 0}  # best first: a tie anywhere may change which leaves are split
    tally = compare_trees(model, clf.tree_, X, positives(y), loss, min_leaf)
    if tally["ties"] == 0:
        assert model.n_nodes == clf.tree_.node_count
        assert np.array_equal(np.asarray(jaxnn.predict(model, X)), clf.predict(X))
        np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, X)), clf.predict_proba(X), atol=1e-6)
    return tally


# --------------------------------------------------------------------------
# equality with scikit-learn
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["pima", "wine"])
def test_gini_splits_equal_sklearn(data, dataset):
    """Binary (pima) and 3-class (wine) Gini trees at depths 1–4: the same
    splits, sizes, predictions and leaf frequencies as scikit-learn's CART."""
    compared = 0
    for depth in (1, 2, 3, 4):
        compared += check_equal(data, dataset, "gini", depth)["nodes"]
    assert compared >= 25


def test_entropy_splits_equal_sklearn_binary(data):
    """Two classes: Σ_c φ_Q(p_c) is twice the entropy, C4.5's splits."""
    tally = check_equal(data, "pima", "entropy", 4)
    assert tally["nodes"] >= 20


def test_ties_are_found_and_excluded(data):
    """Iris's root: petal length and petal width separate setosa alike (a
    tie); the gap check sees it instead of comparing there."""
    tally = check_equal(data, "iris", "gini", 2)
    assert tally["ties"] >= 1


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["bupa", "pima", "wdbc", "ionosphere", "iris", "wine"])
def test_splits_equal_sklearn_everywhere(data, dataset):
    """Every bundled set of the brief, depths 1–4 and unlimited, Gini (and
    entropy on two classes), with min_samples_leaf and max_leaf_nodes."""
    binary = np.unique(data[dataset][1]).size == 2
    compared = 0
    for criterion in ("gini", "entropy") if binary else ("gini",):
        for depth in (1, 2, 3, 4, None):
            compared += check_equal(data, dataset, criterion, depth)["nodes"]
        compared += check_equal(data, dataset, criterion, 4, min_leaf=7)["nodes"]
        for leaves in (2, 5, 12):
            compared += check_equal(data, dataset, criterion, None, max_leaf_nodes=leaves)["nodes"]
    assert compared >= (0 if dataset == "iris" else 30)  # iris: a tie at the root


@pytest.mark.slow
def test_deep_tree_of_many_leaves_equals_sklearn():
    """Over 256 leaves (the leaves' second padded size): the splits equal
    scikit-learn's wherever no two tie."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2500, 3)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=2500) > 0).astype(int) + (X[:, 1] > 0.3)
    model = jaxnn.udt(X, y)
    assert model.n_leaves > 256
    clf = sklearn_tree.DecisionTreeClassifier(random_state=0).fit(X, y)
    tally = compare_trees(model, clf.tree_, X, positives(y), "squared")
    assert tally["nodes"] > 150


def test_min_samples_leaf_and_max_leaf_nodes_equal_sklearn(data):
    """min_samples_leaf skips the thresholds leaving fewer examples on a
    side; max_leaf_nodes grows best first (the leaf of least A_φ next)."""
    tally = check_equal(data, "pima", "gini", 4, min_leaf=9)
    assert tally["nodes"] >= 15
    for dataset, leaves, depth in (("pima", 12, None), ("pima", 8, 3), ("wine", 5, None)):
        tally = check_equal(data, dataset, "gini", depth, max_leaf_nodes=leaves)
        assert tally == {"ties": 0, "nodes": 2 * leaves - 1}
        model = jaxnn.udt(*data[dataset], max_depth=depth, max_leaf_nodes=leaves)
        assert model.n_leaves == leaves


# --------------------------------------------------------------------------
# A_φ against float64
# --------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["squared", "logistic", "matsushita", "phi_power(0.5)"])
def test_a_phi_of_root_against_float64(data, loss):
    """The level program's best A_φ at the root (eq. 104) and its split equal
    a float64 NumPy scan of every threshold of every feature."""
    X, y = data["wine"]
    Ypos = positives(y)
    g = U._Grower(X, Ypos.astype(np.float32), jaxnn.losses.get(loss), 3)
    best, feat, n_left, thr, _, totals = g.evaluate()
    imp, f, t = candidates(loss, X, Ypos, 3)
    parent = X.shape[0] * G64(loss, Ypos.sum(0), np.float64(X.shape[0]))
    A = (imp - parent) / b64(loss)
    i = np.argmin(A)
    np.testing.assert_allclose(best[0], A[i], rtol=1e-5)
    assert feat[0] == f[i]
    np.testing.assert_allclose(thr[0], t[i], rtol=1e-7)
    assert n_left[0] == np.sum(X[:, f[i]] <= thr[0])
    np.testing.assert_array_equal(totals[0], Ypos.sum(0))
    assert A[i] < 0


def test_split_keeps_each_leaf_sorted_and_children_scored_exactly(data):
    """After the root's split (:func:`udt._apply`) every feature's order is
    each leaf's rows in value order, and the level program's A_φ of each
    child equals the float64 scan of that child's rows."""
    X, y = data["pima"]
    Ypos = positives(y)
    loss = "logistic"
    g = U._Grower(X, Ypos.astype(np.float32), jaxnn.losses.get(loss), 2)
    best, feat, n_left, thr, _, _ = g.evaluate()
    g.split([0], feat, thr, n_left)
    best, feat, n_left, thr, _, totals = g.evaluate()
    P = np.asarray(g.P)[: X.shape[0]]
    leaf = np.asarray(g.leaf_of_row)[: X.shape[0]]
    assert g.start == [0, int(np.sum(leaf == 0))]
    for f in range(X.shape[1]):
        for k in (0, 1):
            seg = P[g.start[k]: g.start[k] + g.count[k], f]
            assert np.all(leaf[seg] == k)
            assert np.all(np.diff(X[seg, f]) >= 0)
    for k in (0, 1):
        rows = leaf == k
        imp, f, t = candidates(loss, X[rows], Ypos[rows], 2)
        A = (imp - rows.sum() * G64(loss, Ypos[rows].sum(0), np.float64(rows.sum()))) / b64(loss)
        i = np.argmin(A)
        np.testing.assert_allclose(best[k], A[i], rtol=1e-5)
        assert feat[k] == f[i] and thr[k] <= t[i]
        np.testing.assert_allclose(thr[k], t[i], rtol=1e-7)
        np.testing.assert_array_equal(totals[k], Ypos[rows].sum(0))


# --------------------------------------------------------------------------
# leaves
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def leveraged(data):
    X, y = data["pima"]
    return {loss: jaxnn.udt(X, y, loss=loss, max_depth=3, min_samples_leaf=40, leaves="leveraged", posterior="link")
            for loss in ("squared", "logistic")}


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_leveraged_path_sums_are_links(data, leveraged, loss):
    """α_root = ∇φ(p_root), α_t = ∇φ(p_t) − Σ_{ancestors} α_s (h = 1), and a
    point's score, the sum of α on its path, is ∇φ(p_k) of its leaf k."""
    model = leveraged[loss]
    X, y = data["pima"]
    p = model.proportions.astype(np.float64)
    dphi = {"squared": 2 * p - 1, "logistic": np.log(p / (1 - p))}[loss]
    parent = np.full(model.n_nodes, -1)
    for k in range(model.n_nodes):
        if model.feature[k] >= 0:
            parent[model.left[k]] = parent[model.right[k]] = k
    path = np.array(model.alpha, np.float64)
    for k in range(1, model.n_nodes):  # pre-order: a parent precedes its children
        path[k] = path[parent[k]] + model.alpha[k]
    np.testing.assert_allclose(path, dphi, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model.alpha[0], dphi[0], rtol=1e-6)
    H = np.asarray(jaxnn.decision_function(model, X))
    leaf = _leaf_of(model, X)
    np.testing.assert_allclose(H, dphi[leaf], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, X)), p[leaf], atol=1e-5)  # ∇φ⁻¹(∇φ(p)) = p


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_leveraged_surrogate_is_the_impurity(data, leveraged, loss):
    """Σ_i Σ_c ψ_φ(y_ic H_c(x_i)) = Σ_c [−m a_φ/b_φ + Σ_k |S_k|(−φ(p_kc))/b_φ]
    (Theorem 4's proof; a_φ = −φ(0)) — every leaf impure here."""
    model = leveraged[loss]
    X, y = data["pima"]
    leaves = model.feature < 0
    assert np.all((model.proportions[leaves] > 0) & (model.proportions[leaves] < 1))
    Y = 2 * positives(y) - 1
    H = np.asarray(jaxnn.decision_function(model, X), np.float64)
    psi = np.asarray(model.loss.psi(np.asarray(Y * H, np.float32)), np.float64)
    n = model.n_samples[leaves].astype(np.float64)
    p = model.proportions[leaves].astype(np.float64)
    m = X.shape[0]
    expected = 2 * m * phi64(loss, 0.0) / b64(loss) + np.sum(n[:, None] * -phi64(loss, p)) / b64(loss)
    np.testing.assert_allclose(psi.sum(), expected, rtol=1e-5)


def _leaf_of(model, X):
    node = np.zeros(X.shape[0], int)
    for _ in range(model.depth):
        f = model.feature[node]
        go = X[np.arange(X.shape[0]), np.maximum(f, 0)] <= model.threshold[node]
        node = np.where(f < 0, node, np.where(go, model.left[node], model.right[node]))
    return node


def test_posterior_and_link_leaves(data):
    """posterior: scores and predict_proba (the link's) are the leaf frequencies; link:
    scores ∇φ(p) (clipped to [ε, 1 − ε] where infinite) and the same labels."""
    X, y = data["wine"]
    post = jaxnn.udt(X, y, loss="logistic", max_depth=3, posterior="link")
    link = jaxnn.udt(X, y, loss="logistic", max_depth=3, leaves="link", posterior="link")
    leaf = _leaf_of(post, X)
    p = post.proportions[leaf]
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(post, X)), p, atol=1e-7)
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(post, X)), p, atol=1e-6)
    q = np.clip(p, np.float32(U.LINK_EPSILON), np.float32(1 - U.LINK_EPSILON)).astype(np.float64)
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(link, X)), np.log(q / (1 - q)), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_array_equal(np.asarray(jaxnn.predict(link, X)), np.asarray(jaxnn.predict(post, X)))
    assert np.array_equal(post.feature, link.feature)


# --------------------------------------------------------------------------
# max_bins, multilabel, compilation
# --------------------------------------------------------------------------


def test_max_bins_at_least_distinct_values_is_exact(data):
    X, y = data["wine"]
    exact = jaxnn.udt(X, y, max_depth=4)
    binned = jaxnn.udt(X, y, max_depth=4, max_bins=max(np.unique(c).size for c in X.T))
    for field in ("feature", "threshold", "n_samples", "left", "right"):
        np.testing.assert_array_equal(getattr(binned, field), getattr(exact, field))


def test_few_bins_give_a_valid_tree(data):
    """max_bins = 4: every threshold splits the training values where one of
    ≤ 3 cuts of its feature does, and each node's size is the training rows
    its path sends there."""
    X, y = data["pima"]
    model = jaxnn.udt(X, y, max_depth=4, max_bins=4)
    cuts = U.binning_cuts(X, 4)
    assert all(c.size <= 3 for c in cuts)
    inner = model.feature >= 0
    for f, t in zip(model.feature[inner], model.threshold[inner]):
        assert any(np.array_equal(X[:, f] <= t, X[:, f] <= c) for c in cuts[f])
    leaf = _leaf_of(model, X)
    leaves = np.flatnonzero(model.feature < 0)
    np.testing.assert_array_equal(np.bincount(leaf, minlength=model.n_nodes)[leaves], model.n_samples[leaves])
    assert model.n_nodes > 7


def test_multilabel(data):
    """An indicator y: each label's leaf value is its frequency in the leaf;
    predict answers the labels with p > 1/2."""
    X, Y = jaxnn.datasets.multilabel(n_samples=300, n_features=4, n_classes=3, seed=1)
    model = jaxnn.udt(X, Y, max_depth=3)
    assert model.multilabel
    leaf = _leaf_of(model, X.astype(np.float32))
    for k in np.flatnonzero(model.feature < 0):
        np.testing.assert_allclose(model.proportions[k], Y[leaf == k].mean(0), rtol=1e-6)
    pred = np.asarray(jaxnn.predict(model, X))
    np.testing.assert_array_equal(pred, (model.proportions[leaf] > 0.5).astype(pred.dtype))


def test_second_fit_of_same_shapes_compiles_nothing(data, compilations):
    """Rows shuffled, another min_samples_leaf: the same programs."""
    X, y = data["pima"]
    watched = (U._evaluate, U._apply, U._descend)
    with compilations(*watched):
        first = jaxnn.udt(X, y, max_depth=3)
        jaxnn.predict(first, X)
    rng = np.random.default_rng(0)
    with compilations() as compiled:
        rows = rng.permutation(X.shape[0])
        second = jaxnn.udt(X[rows], y[rows], max_depth=3, min_samples_leaf=3)
        jaxnn.predict(second, X)
    assert compiled.of(*watched) == []


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(loss="exponential"), ValueError, "loss 'exponential'"),
    (dict(loss="nope"), ValueError, "unknown loss"),
    (dict(max_depth=0), ValueError, "max_depth"),
    (dict(max_depth=1.5), TypeError, "max_depth"),
    (dict(min_samples_leaf=0), ValueError, "min_samples_leaf"),
    (dict(max_leaf_nodes=1), ValueError, "max_leaf_nodes"),
    (dict(max_bins=1), ValueError, "max_bins"),
    (dict(leaves="posterio"), ValueError, "did you mean 'posterior'"),
    (dict(leaves=3), TypeError, "leaves"),
])
def test_bad_arguments(kwargs, error, words):
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    with pytest.raises(error, match=words):
        jaxnn.udt(X, [0, 1, 0, 1, 0, 1], **kwargs)


@pytest.mark.parametrize("name", ["max_depth", "min_samples_leaf", "max_leaf_nodes", "max_bins"])
@pytest.mark.parametrize("value", ["3", True, [3], 2.5])
def test_integer_arguments_refuse_other_types(name, value):
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    with pytest.raises(TypeError, match=name):
        jaxnn.udt(X, [0, 1, 0, 1, 0, 1], **{name: value})


def test_nan_in_x_is_refused():
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        jaxnn.udt(X, [0, 1, 0, 1, 0, 1])
