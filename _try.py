import numpy as np, jax, jaxnn, sys
sys.path.insert(0,"tests")
from test_uls import *
rng = np.random.default_rng(0)
X = rng.normal(size=(120, 4)); X[:, 2] = rng.integers(0, 2, 120); X[:, 3] = 1.5
y = (X[:, 0] + 0.7 * X[:, 1] + 0.8 * X[:, 2] > 0.4).astype(int) + (X[:, 1] > 1.0)
bag = ["logistic", "matsushita", "exponential"]
with jax.enable_x64(True):
    model = jaxnn.uls(X, y, rounds=2, loss=bag, loss_choice="edge")
    Y = encoded(y)
    h = rule_values_numpy(X, model.rule_feature, model.rule_threshold, model.rule_greater)
    margins = Y * h[:, 0] * np.asarray(model.rule_alpha)[0]
    feature, threshold, greater = weak_module.literals(X)
    Lmat = weak_module.literal_matrix(jnp.asarray(X), jnp.asarray(feature), jnp.asarray(threshold), jnp.asarray(greater))
    for name in bag:
        w = numpy_weight(name, margins)
        lits, rule = weak_module.grow_rules(Lmat, jnp.asarray(w * Y), 2)
        print(name, np.abs(np.sum(w * Y * np.asarray(rule), 0)) / np.sum(w, 0), np.asarray(lits).tolist())
    print(model.loss_index, model.rule_feature[1], model.risk)
    for name in bag:
        m1 = jaxnn.uls(X, y, rounds=1, loss=name); print(name, m1.rule_alpha, m1.rule_feature[0].tolist())
    print(model.rule_alpha)
    from jaxnn._src import uls as U
    losses = tuple(get_loss(n) for n in bag)
    Lp = jnp.pad(Lmat, ((0,0),(0, 256-Lmat.shape[1])))
    E1, lits, alphas, risk, idx = U._boost_features(Lp, jnp.asarray(Y), jnp.ones(120), jnp.zeros((120,3)), kind="rules", losses=losses, choice="edge", rounds=1, max_literals=2, corrective=False)
    print(np.abs(np.asarray(E1) - margins).max(), np.asarray(lits).tolist(), idx)
    E1s, lits, alphas, risk, idx = U._boost_features(Lp, jnp.asarray(Y), jnp.ones(120), jnp.zeros((120,3)), kind="rules", losses=losses[:1], choice="edge", rounds=1, max_literals=2, corrective=False)
    print(np.abs(np.asarray(E1s) - margins).max(), np.asarray(lits).tolist(), idx)
    E2, lits, alphas, risk, idx = U._boost_features(Lp, jnp.asarray(Y), jnp.ones(120), jnp.zeros((120,3)), kind="rules", losses=losses, choice="edge", rounds=2, max_literals=2, corrective=False)
    print(np.asarray(lits).tolist(), idx)
