"""jaxnn.save / jaxnn.load (a versioned model file that never runs code), the
estimator's save / load, and the validation of a Model where it enters
prediction (docs/guide/persistence.md)."""

import dataclasses
import json
import os
import pickle
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn
from jaxnn._src import persist

def _blobs(m=90, C=3, seed=0, d=2):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(C, d))
    y = np.arange(m) % C
    return (centres[y] + rng.normal(size=(m, d))).astype(np.float32), y


@pytest.fixture(scope="module")
def data():
    X, y = _blobs()
    Xq, _ = _blobs(m=25, seed=1)
    return X, y, Xq


@pytest.fixture(scope="module")
def model(data):
    X, y, _ = data
    return jaxnn.fit(X, y, k=5, posterior="link")


def _same_model(a, b, Xq, *, split=False):
    """a and b equal field by field (arrays bitwise, same dtypes; the same
    loss object) and in their predictions."""
    assert type(a) is type(b)
    for field in dataclasses.fields(a):
        u, v = getattr(a, field.name), getattr(b, field.name)
        if isinstance(u, (np.ndarray, jax.Array)):
            u, v = np.asarray(u), np.asarray(v)
            assert u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v), field.name
        else:
            assert type(u) is type(v) and u == v, field.name
    assert b.loss is a.loss  # the cached catalogue object: nothing retraces
    assert [type(c) for c in b.classes] == [type(c) for c in a.classes]
    if split:
        predictions = (jaxnn.ensemble.predict_proba_split, jaxnn.ensemble.predict_split)
    else:
        predictions = (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict)
    for fn in predictions:
        want, got = np.asarray(fn(a, Xq)), np.asarray(fn(b, Xq))
        assert want.dtype == got.dtype and np.array_equal(want, got), fn.__name__


def _round_trip(model, tmp_path, name="model.jaxnn"):
    path = tmp_path / name
    jaxnn.save(model, path)
    return jaxnn.load(path)


# --------------------------------------------------------------------------
# round trips
# --------------------------------------------------------------------------


@pytest.mark.parametrize("settings", [
    dict(loss="logistic", algorithm=jaxnn.gnnb(epsilon=0.3), trace=True, posterior="votes"),
    dict(loss="exponential", algorithm=jaxnn.unn(smoothing=False, max_delta=20.0)),
    dict(loss="amari(0.3)", algorithm=jaxnn.unn_fast(max_delta=30.0), rounds=130),
    dict(loss="phi_mu(0.25)", algorithm="n3", chooser="random", seed=3),
    dict(loss="calibrated_hinge", algorithm="n3", posterior="auto"),
], ids=["gnnb-trace-votes", "unn-exponential", "unn_fast-amari", "n3-phi_mu", "n3-hinge-auto"])
def test_round_trip_is_bitwise(data, tmp_path, settings):
    X, y, Xq = data
    model = jaxnn.fit(X, y, k=5, **settings)
    _same_model(model, _round_trip(model, tmp_path), Xq)


def test_round_trip_of_string_classes_multilabel_and_far_points(data, tmp_path):
    X, y, Xq = data
    named = jaxnn.fit(X, np.array(["cat", "dog", "émeu"])[y], k=5, posterior="link")
    back = _round_trip(named, tmp_path)
    _same_model(named, back, Xq)
    assert isinstance(back.classes[2], np.str_) and back.classes[2] == "émeu"
    multi = jaxnn.fit(X, np.stack([y == 0, y != 1], axis=1).astype(int), k=5, posterior="link")
    assert multi.multilabel and multi.classes == (0, 1)
    back = _round_trip(multi, tmp_path)
    _same_model(multi, back, Xq)
    assert [type(c) for c in back.classes] == [int, int]  # Python ints stay Python ints
    far = X.astype(np.float64) + 1e8  # float64 far from 0: stored centred, with its origin
    shifted = jaxnn.fit(far, y, k=5, posterior="link")
    assert shifted.origin is not None
    _same_model(shifted, _round_trip(shifted, tmp_path), Xq.astype(np.float64) + 1e8)


def test_round_trip_of_a_model_sized_for_its_candidates(data, tmp_path):
    """fit(k="auto")'s model keeps the largest candidate k its searches are
    sized for (search_k): a loaded one searches and scores alike."""
    X, y, Xq = data
    model = jaxnn.fit(X, y, k="auto", loss="logistic", rounds=X.shape[0])
    assert model.search_k == 50
    _same_model(model, _round_trip(model, tmp_path), Xq)


def test_round_trip_of_a_float64_model(data, tmp_path):
    X, y, Xq = data
    path = tmp_path / "wide.jaxnn"
    with jax.enable_x64(True):
        model = jaxnn.fit(X.astype(np.float64), y, k=5, trace=True, posterior="link")
        assert model.alpha.dtype == jnp.float64
        jaxnn.save(model, path)
        back = jaxnn.load(path)
        assert isinstance(back.alpha, jax.Array)
        _same_model(model, back, Xq.astype(np.float64))
        want = np.asarray(jaxnn.predict_proba(model, Xq.astype(np.float64)))
    # without x64: float64 arrays stay NumPy, as an unpickled model's, and predict in float32 with a warning
    back = jaxnn.load(path)
    assert isinstance(back.alpha, np.ndarray) and back.alpha.dtype == np.float64
    np.testing.assert_array_equal(back.alpha, np.asarray(model.alpha))
    with pytest.warns(UserWarning, match="fit in float64"):
        got = np.asarray(jaxnn.predict_proba(back, Xq))
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_split_model_round_trip(data, tmp_path):
    X, y, Xq = data
    X4 = np.concatenate([X, X[::-1]], axis=1)
    Xq4 = np.concatenate([Xq, Xq[::-1]], axis=1)
    sm = jaxnn.ensemble.fit_split(X4, y, n_splits=2, k=5, algorithm="unn", loss="matsushita", trace=True)
    _same_model(sm, _round_trip(sm, tmp_path), Xq4, split=True)
    far = jaxnn.ensemble.fit_split(X4.astype(np.float64) + 1e8, y, blocks=[[0, 3], [1, 2, 3]], norm=None, mean=0.5, k=4)
    assert far.origin is not None and far.mean == 0.5
    _same_model(far, _round_trip(far, tmp_path), Xq4.astype(np.float64) + 1e8, split=True)


def test_save_writes_exactly_the_path_given(model, tmp_path):
    jaxnn.save(model, str(tmp_path / "m.jaxnn"))  # a str, and no ".npz" appended
    jaxnn.save(model, tmp_path / "plain")  # a PathLike, no extension at all
    assert sorted(os.listdir(tmp_path)) == ["m.jaxnn", "plain"]  # no temporary file left
    assert jaxnn.load(str(tmp_path / "plain")).k == model.k
    with zipfile.ZipFile(tmp_path / "m.jaxnn") as archive:  # the documented layout
        assert sorted(archive.namelist()) == ["X.npy", "Y.npy", "__jaxnn__.npy", "alpha.npy", "classes.npy"]
    meta = _metadata(tmp_path / "m.jaxnn")
    assert (meta["format"], meta["format_version"], meta["jaxnn_version"], meta["kind"]) == (
        "jaxnn", persist.FORMAT_VERSION, jaxnn.__version__, "Model")
    fields = meta["model"]["fields"]
    assert fields["loss"] == {"name": "logistic", "parameters": {}}
    assert fields["algorithm"] == {"name": "gnnb", "epsilon": 0.5}
    assert (fields["k"], fields["multilabel"], fields["trace"], fields["classes"]) == (5, False, None, "numpy")
    assert meta["model"]["array_fields"] == ["X", "Y", "alpha"]
    assert meta["arrays"]["alpha"] == {"dtype": "<f4", "shape": list(model.alpha.shape)}
    with pytest.raises(TypeError, match="str or os.PathLike"):
        jaxnn.save(model, 3)


def test_the_estimator_saves_and_loads(data, tmp_path):
    pytest.importorskip("sklearn")
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y, Xq = data
    labels = np.array(["a", "b", "c"])[y]
    est = BoostedKNNClassifier(k=5, loss=jaxnn.losses.get("matsushita"), algorithm=jaxnn.unn(max_delta=40.0),
                               trace=True).fit(X, labels)
    path = tmp_path / "est.jaxnn"
    est.save(path)
    back = BoostedKNNClassifier.load(path)
    assert back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.classes_, est.classes_)
    np.testing.assert_array_equal(back.trace_, est.trace_)
    assert back.n_features_in_ == 2
    _same_model(est.model_, back.model_, Xq)
    for method in ("predict", "predict_proba", "decision_function"):
        np.testing.assert_array_equal(getattr(back, method)(Xq), getattr(est, method)(Xq))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(back)).predict(Xq), est.predict(Xq))  # still pickles
    # a ±1 indicator matrix answers in its own convention after loading too
    Y = np.where(np.stack([y == 0, y != 1], axis=1), 1, -1)
    multi = BoostedKNNClassifier(k=5).fit(X, Y)
    multi.save(path)
    np.testing.assert_array_equal(BoostedKNNClassifier.load(path).predict(Xq), multi.predict(Xq))
    # an unfitted estimator keeps its parameters
    BoostedKNNClassifier(k=7, epsilon=0.25, rounds="auto").save(path)
    bare = BoostedKNNClassifier.load(path)
    assert (bare.k, bare.epsilon, bare.rounds) == (7, 0.25, "auto") and not hasattr(bare, "model_")
    # a model file is not an estimator file, nor the other way round
    jaxnn.save(est.model_, tmp_path / "model.jaxnn")
    with pytest.raises(jaxnn.ModelFileError, match="holds a jaxnn 'Model'.*jaxnn.load"):
        BoostedKNNClassifier.load(tmp_path / "model.jaxnn")
    with pytest.raises(jaxnn.ModelFileError, match="BoostedKNNClassifier.load"):
        jaxnn.load(path)


def test_the_estimator_finds_its_devices_again(tmp_path):
    pytest.importorskip("sklearn")
    from jaxnn.sklearn import BoostedKNNClassifier

    path = tmp_path / "est.jaxnn"
    devices = jax.devices()[:1]
    BoostedKNNClassifier(k=3, devices=devices).save(path)
    assert _metadata(path)["estimator"]["params"]["devices"] == {
        "devices": [[devices[0].platform, devices[0].id]], "tuple": False}
    back = BoostedKNNClassifier.load(path)
    assert back.devices == devices and back.devices[0] is devices[0]

    def elsewhere(meta):
        meta["estimator"]["params"]["devices"]["devices"] = [["cpu", 99]]

    with pytest.warns(UserWarning, match=r"saved with devices \['cpu:99'\] that this process does not have"):
        BoostedKNNClassifier.load(_rewrite(path, tmp_path / "elsewhere.jaxnn", meta=elsewhere))


def test_the_estimator_keeps_pandas_feature_names(data, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("sklearn")
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y, Xq = data
    frame = pd.DataFrame(X, columns=["width", "height"])
    est = BoostedKNNClassifier(k=5).fit(frame, pd.Series(np.array(["u", "v", "w"])[y], dtype=object))
    est.save(tmp_path / "est.jaxnn")
    back = BoostedKNNClassifier.load(tmp_path / "est.jaxnn")
    assert back.feature_names_in_.dtype == object and list(back.feature_names_in_) == ["width", "height"]
    assert back.classes_.dtype == est.classes_.dtype == object
    query = pd.DataFrame(Xq, columns=["width", "height"])
    np.testing.assert_array_equal(back.predict(query), est.predict(query))


# --------------------------------------------------------------------------
# what cannot be saved
# --------------------------------------------------------------------------


def test_a_custom_loss_cannot_be_saved(data, tmp_path):
    X, y, _ = data
    loss = jaxnn.losses.from_phi(lambda p: -jnp.sqrt(p * (1.0 - p)), name="my_phi")
    model = jaxnn.fit(X, y, k=5, loss=loss, posterior="link")
    path = tmp_path / "custom.jaxnn"
    with pytest.raises(ValueError, match="'my_phi'.*from_phi / from_psi is Python code"):
        jaxnn.save(model, path)
    assert not path.exists() and not os.listdir(tmp_path)  # nothing written, no temporary left
    jaxnn.save(dataclasses.replace(model, loss=jaxnn.losses.matsushita()), path)
    with pytest.raises(ValueError, match="my_phi"):
        jaxnn.save(model, path)
    assert jaxnn.load(path).loss is jaxnn.losses.matsushita()  # a failed save leaves the previous file whole
    pytest.importorskip("sklearn")
    from jaxnn.sklearn import BoostedKNNClassifier

    with pytest.raises(ValueError, match="my_phi"):
        BoostedKNNClassifier(k=5, loss=loss).save(tmp_path / "est.jaxnn")


def test_save_refuses_what_is_not_a_model(model, tmp_path):
    with pytest.raises(TypeError, match="jaxnn Model"):
        jaxnn.save({"alpha": model.alpha}, tmp_path / "x.jaxnn")
    with pytest.raises(ValueError, match="model.alpha"):  # an invalid model is not written
        jaxnn.save(dataclasses.replace(model, alpha=model.alpha[:7]), tmp_path / "x.jaxnn")
    assert not (tmp_path / "x.jaxnn").exists()


# --------------------------------------------------------------------------
# files load refuses
# --------------------------------------------------------------------------


def _metadata(path):
    with np.load(path, allow_pickle=False) as npz:
        return json.loads(str(npz["__jaxnn__"][()]))


def _rewrite(src, dst, *, meta=None, arrays=None, drop=()):
    """dst: src's entries, with the metadata changed by meta(dict) and arrays replaced or dropped."""
    with np.load(src, allow_pickle=False) as npz:
        entries = {name: npz[name] for name in npz.files}
    m = json.loads(str(entries["__jaxnn__"][()]))
    if meta is not None:
        meta(m)
    entries["__jaxnn__"] = np.asarray(json.dumps(m))
    entries.update(arrays or {})
    for name in drop:
        del entries[name]
    with open(dst, "wb") as f:
        np.savez(f, **entries)
    return dst


@pytest.fixture
def saved(model, tmp_path):
    path = tmp_path / "good.jaxnn"
    jaxnn.save(model, path)
    return path


def _refused(path, match):
    with pytest.raises(jaxnn.ModelFileError, match=match) as info:
        jaxnn.load(path)
    assert isinstance(info.value, ValueError) and str(path) in str(info.value) and info.value.path == str(path)
    return info.value


def test_a_missing_file_is_python_s_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        jaxnn.load(tmp_path / "nowhere.jaxnn")


def test_truncated_files_are_refused(saved, tmp_path):
    data = saved.read_bytes()
    for size in (len(data) // 2, len(data) - 30, 10):
        cut = tmp_path / f"cut{size}.jaxnn"
        cut.write_bytes(data[:size])
        _refused(cut, "truncated or corrupted")
    empty = tmp_path / "empty.jaxnn"
    empty.write_bytes(b"")
    _refused(empty, "empty")


def test_corrupted_bytes_are_refused(saved, model, tmp_path):
    data = bytearray(saved.read_bytes())
    with zipfile.ZipFile(saved) as archive:
        info = archive.getinfo("alpha.npy")
    name_size, extra_size = np.frombuffer(bytes(data[info.header_offset + 26:info.header_offset + 30]), "<u2")
    start = info.header_offset + 30 + int(name_size) + int(extra_size) + 200  # past the .npy header: alpha's values
    data[start:start + 8] = b"\xff" * 8
    flipped = tmp_path / "flipped.jaxnn"
    flipped.write_bytes(bytes(data))
    _refused(flipped, r"corrupted: entry 'alpha' cannot be read.*CRC")


def test_corrupted_metadata_and_entries_are_refused(saved, model, tmp_path):
    bad_json = _rewrite(saved, tmp_path / "json.jaxnn")
    entries = dict(np.load(bad_json, allow_pickle=False))
    entries["__jaxnn__"] = np.asarray('{"format": "jaxnn", "format_version": 1, ')
    with open(bad_json, "wb") as f:
        np.savez(f, **entries)
    _refused(bad_json, "metadata is not valid JSON")
    _refused(_rewrite(saved, tmp_path / "missing.jaxnn", drop=["Y"]), "entry 'Y' that its metadata lists is missing")
    m = model.alpha.shape[0]
    _refused(_rewrite(saved, tmp_path / "shape.jaxnn", arrays={"alpha": np.zeros((m - 1, 3), np.float32)}),
             r"entry 'alpha' has dtype <f4 and shape \(89, 3\) where the metadata says <f4 and \[90, 3\]")
    _refused(_rewrite(saved, tmp_path / "dtype.jaxnn", arrays={"X": np.asarray(model.X, np.float64)}),
             "entry 'X' has dtype <f8")

    def short_alpha(meta):  # consistent file, inconsistent model
        meta["arrays"]["alpha"]["shape"] = [7, 3]

    _refused(_rewrite(saved, tmp_path / "model.jaxnn", meta=short_alpha, arrays={"alpha": np.zeros((7, 3), np.float32)}),
             "holds an invalid model: model.alpha has shape")

    def unknown_loss(meta):
        meta["model"]["fields"]["loss"] = {"name": "hinge", "parameters": {}}

    _refused(_rewrite(saved, tmp_path / "loss.jaxnn", meta=unknown_loss), "unknown loss 'hinge'")

    def bad_epsilon(meta):
        meta["model"]["fields"]["algorithm"]["epsilon"] = 1.5

    _refused(_rewrite(saved, tmp_path / "eps.jaxnn", meta=bad_epsilon), "epsilon")

    def bad_k(meta):
        meta["model"]["fields"]["k"] = 1000

    _refused(_rewrite(saved, tmp_path / "k.jaxnn", meta=bad_k), r"invalid model: model.k must lie in \[1, m\]")

    def no_k(meta):
        del meta["model"]["fields"]["k"]

    _refused(_rewrite(saved, tmp_path / "nok.jaxnn", meta=no_k), "missing 1 required .*'k'")

    def unknown_field(meta):
        meta["model"]["fields"]["colour"] = "blue"

    _refused(_rewrite(saved, tmp_path / "field.jaxnn", meta=unknown_field), r"the fields \['colour'\] are not a Model's")


def test_foreign_files_are_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("alpha, X, Y\n1, 2, 3\n")
    _refused(text, "not a jaxnn model file")
    npz = tmp_path / "arrays.npz"
    np.savez(npz, alpha=np.ones((3, 2)), X=np.zeros((3, 2)))
    _refused(npz, r"not a jaxnn model file: a zip archive without jaxnn's metadata entry '__jaxnn__' \(it holds "
                  r"\['X', 'alpha'\]\)")
    npy = tmp_path / "array.npy"
    np.save(npy, np.ones(3))
    _refused(npy, r"not a jaxnn model file \(a NumPy .npy file")
    other = tmp_path / "other.npz"
    np.savez(other, __jaxnn__=np.asarray(json.dumps({"format": "something-else"})))
    _refused(other, "does not name the format 'jaxnn'")


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", ["default", "metric"])
def test_an_older_format_version_loads_and_predicts_as_the_jaxnn_that_wrote_it(name, version):
    """tests/data/format_v<N>_*.jaxnn were written by jaxnn.save in format
    version N (by the last jaxnn that wrote it: make_format_files.py), with
    that jaxnn's predictions of the same queries: a default 3-class model of
    string labels (held-out T and shrinkage), and a given metric with the
    Matsushita loss, UNN and the link posteriors.  Loaded today, they predict
    the same (version 1 has no kernel term: w = 0; neither version a
    search_k)."""
    folder = os.path.join(os.path.dirname(__file__), "data")
    path = os.path.join(folder, f"format_v{version}_{name}.jaxnn")
    with zipfile.ZipFile(path) as archive, archive.open("__jaxnn__.npy") as fh:
        assert json.loads(str(np.load(fh)))["format_version"] == version
    model = jaxnn.load(path)
    assert model.search_k == 0  # version 4's field: an older file sizes its searches for its own k
    if version == 1:
        assert model.posterior_weight == 0.0 and model.posterior_bandwidth == 0.0
    with np.load(os.path.join(folder, f"format_v{version}_predictions.npz")) as old:
        Xq = old["queries"]
        np.testing.assert_array_equal(jaxnn.predict(model, Xq), old[f"{name}.predict"])
        np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, Xq)), old[f"{name}.predict_proba"],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(jaxnn.decision_function(model, Xq)), old[f"{name}.decision_function"],
                                   rtol=1e-5, atol=1e-5)


def test_a_newer_format_version_is_refused(saved, tmp_path):
    def newer(meta):
        meta["format_version"] = persist.FORMAT_VERSION + 1
        meta["jaxnn_version"] = "9.0.0"

    err = _refused(_rewrite(saved, tmp_path / "newer.jaxnn", meta=newer), "newer jaxnn")
    assert (f"format version {persist.FORMAT_VERSION + 1}" in str(err)
            and f"up to {persist.FORMAT_VERSION}" in str(err) and "9.0.0" in str(err))


RAN = []


def _record(what):
    RAN.append(what)


class _Trap:
    """Unpickling it runs :func:`_record`."""

    def __reduce__(self):
        return (_record, ("unpickled",))


def test_load_never_unpickles(saved, tmp_path):
    trap = tmp_path / "trap.jaxnn"
    entries = dict(np.load(saved, allow_pickle=False))
    entries["alpha"] = np.array([_Trap()], dtype=object)  # a pickle inside the .npy entry
    with open(trap, "wb") as f:
        np.savez(f, **entries)
    np.load(trap, allow_pickle=True)["alpha"]
    assert RAN == ["unpickled"]  # unpickling runs the code the file names
    RAN.clear()
    _refused(trap, "holds Python objects.*never unpickles")
    assert RAN == []


# --------------------------------------------------------------------------
# a Model is validated where it enters prediction
# --------------------------------------------------------------------------


def _predictions(model, Xq):
    for fn in (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict):
        fn(model, Xq)


@pytest.mark.parametrize("change, error, match", [
    (lambda m: dict(alpha=m.alpha[:7]), ValueError, r"model.alpha has shape \(7, 3\) but model.X has 90 rows"),
    (lambda m: dict(alpha=m.alpha[:, :2]), ValueError, r"model.Y has shape \(90, 3\) but model.alpha has \(90, 2\)"),
    (lambda m: dict(alpha=m.alpha[:, 0]), ValueError, "model.alpha must be 2-D"),
    (lambda m: dict(alpha=np.asarray(m.alpha).tolist()), TypeError, "model.alpha must be an array, got list"),
    (lambda m: dict(Y=m.Y[:7]), ValueError, r"model.Y has shape \(7, 3\)"),
    (lambda m: dict(X=m.X[:50]), ValueError, "model.alpha has shape .* but model.X has 50 rows"),
    (lambda m: dict(X=np.asarray(m.X).astype(str)), TypeError, "model.X must hold numbers"),
    (lambda m: dict(trace=jnp.zeros((3, 4))), ValueError, "model.trace must be 1-D"),
    (lambda m: dict(origin=jnp.zeros(3)), ValueError, r"model.origin has shape \(3,\)"),
    (lambda m: dict(classes=m.classes[:2]), ValueError, "model.classes holds 2 labels but model.alpha has 3 columns"),
    (lambda m: dict(classes=5), TypeError, "model.classes must be a tuple"),
    (lambda m: dict(alpha=m.alpha[:, :1], Y=m.Y[:, :1], classes=m.classes[:1]), ValueError, "at least 2 classes"),
    (lambda m: dict(k=0), ValueError, r"model.k must lie in \[1, m\] = \[1, 90\]"),
    (lambda m: dict(k=91), ValueError, r"model.k must lie in \[1, m\]"),
    (lambda m: dict(k=5.0), TypeError, "model.k must be an integer"),
    (lambda m: dict(posterior_mix=2.0), ValueError, r"model.posterior_mix must be finite and lie in \[0, 1\]"),
    (lambda m: dict(posterior_mix=-0.1), ValueError, "model.posterior_mix"),
    (lambda m: dict(posterior_mix=float("nan")), ValueError, "model.posterior_mix"),
    (lambda m: dict(posterior_mix="0.5"), TypeError, "model.posterior_mix must be a real number"),
    (lambda m: dict(rounds=-1), ValueError, "model.rounds must be >= 0"),
    (lambda m: dict(search_k=91), ValueError, r"model.search_k must be 0 or lie in \[1, m\] = \[1, 90\]"),
    (lambda m: dict(search_k=-1), ValueError, "model.search_k must be 0 or lie in"),
    (lambda m: dict(search_k=5.0), TypeError, "model.search_k must be an integer"),
    (lambda m: dict(multilabel="no"), TypeError, "model.multilabel must be a bool"),
    (lambda m: dict(loss="logistic"), TypeError, "model.loss must be a jaxnn.losses.Loss"),
    (lambda m: dict(algorithm="gnnb"), TypeError, "model.algorithm must be an algorithm object"),
], ids=["alpha-rows", "alpha-columns", "alpha-1d", "alpha-list", "Y-rows", "X-rows", "X-strings", "trace-2d",
        "origin-shape", "classes-few", "classes-not-sequence", "one-class", "k-0", "k-above-m", "k-float", "mix-2",
        "mix-negative", "mix-nan", "mix-str", "rounds", "search_k-above-m", "search_k-negative", "search_k-float",
        "multilabel", "loss", "algorithm"])
def test_a_bad_model_is_refused_where_it_enters_prediction(model, data, change, error, match):
    bad = dataclasses.replace(model, **change(model))
    for fn in (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict):
        with pytest.raises(error, match=match):
            fn(bad, data[2])


def test_a_bad_posterior_temperature_is_refused(model, data):
    for value, error in ((-1.0, ValueError), (float("inf"), ValueError), ("1", TypeError)):
        with pytest.raises(error, match="model.posterior_temperature"):
            jaxnn.predict_proba(dataclasses.replace(model, posterior_temperature=value), data[2])


def test_validation_holds_for_pickled_rebuilt_and_traced_models(model, data):
    Xq = data[2]
    short = dataclasses.replace(model, alpha=model.alpha[:7])
    with pytest.raises(ValueError, match="model.alpha has shape"):
        jaxnn.predict_proba(pickle.loads(pickle.dumps(short)), Xq)
    leaves, treedef = jax.tree_util.tree_flatten(model)
    rebuilt = jax.tree_util.tree_unflatten(treedef, [leaves[0][:7], *leaves[1:]])  # alpha first
    with pytest.raises(ValueError, match="model.alpha has shape"):
        jaxnn.predict(rebuilt, Xq)
    with pytest.raises(ValueError, match="model.alpha has shape"):  # traced leaves: their shapes are checked
        jax.jit(jaxnn.predict_proba)(short, jnp.asarray(Xq))
    # a valid model still runs traced, closed over and eagerly alike
    want = np.asarray(jaxnn.predict_proba(model, Xq))
    # traced queries are not padded: the other shape's program may round the last bit otherwise
    np.testing.assert_allclose(np.asarray(jax.jit(jaxnn.predict_proba)(model, jnp.asarray(Xq))), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda q: jaxnn.predict_proba(model, q))(jnp.asarray(Xq))), want,
                               rtol=1e-6)


def test_valid_hand_made_models_still_predict(model, data):
    Xq = data[2]
    # k = m (a vote-only model of knn_subsample may use every point), algorithm None, mix at the ends, NumPy leaves
    for change in (dict(k=model.X.shape[0]), dict(algorithm=None, posterior_mix=1.0), dict(posterior_mix=0.0),
                   dict(alpha=np.asarray(model.alpha), X=np.asarray(model.X), Y=np.asarray(model.Y))):
        _predictions(dataclasses.replace(model, **change), Xq)
    sub = jaxnn.knn_subsample(data[0], data[1], theta=0.5, k=5)
    assert jaxnn.predict(sub, Xq).shape == (Xq.shape[0],)
