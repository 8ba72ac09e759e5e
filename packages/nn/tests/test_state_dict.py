"""Layer state dicts (dotted names, all-or-nothing loading) and pickling / deep copies."""

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zerograd_nn.functional as F
from zerograd import Parameter
from zerograd.backends import as_numpy, backend_of
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn.layers import Layer
from zerograd_nn.models import MLP, Model, Sequential


class Blocks(Model):
    """Sub-layers by attribute, in a list, and a tied Parameter reachable twice."""

    def __init__(self):
        super().__init__()
        self.head = L.Linear(3, in_size=2)
        self.blocks = [L.Linear(3, in_size=3), L.Linear(2, in_size=3, nobias=True)]
        self.scale = Parameter(np.ones(2, dtype=np.float32), name="scale")
        self.tied = self.head.W  # the same Parameter again: listed once, first name wins

    def forward(self, x):
        h = self.head(x)
        for b in self.blocks:
            h = b(h)
        return h * self.scale


def x_in(n=4, d=2, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def snapshot(model):
    return {k: np.array(as_numpy(p.data)) for k, p in model.named_params().items()}


def test_dotted_names_for_nested_lists_sequential_and_tied_params():
    m = Blocks()
    assert list(m.named_params()) == [
        "head.W", "head.b", "scale", "blocks.0.W", "blocks.0.b", "blocks.1.W",
    ]  # fmt: skip
    assert m.named_params()["head.W"] is m.head.W
    seq = Sequential(L.Linear(3), F.relu, L.Linear(2))  # children by their index
    assert list(seq.named_params()) == ["l0.W", "l0.b", "l2.W", "l2.b"]
    assert list(MLP((4, 3, 2)).named_params()) == [
        "l0.W", "l0.b", "l1.W", "l1.b", "l2.W", "l2.b",
    ]  # fmt: skip


def test_layers_in_a_list_are_trained_by_the_optimizer():
    m = Blocks()
    y = m(x_in())
    (y * y).sum().backward()
    before = m.blocks[1].W.data.copy()
    O.SGD(lr=0.1).setup(m).update()
    assert list(m.params()) == list(m.named_params().values())
    np.testing.assert_allclose(m.blocks[1].W.data, before - 0.1 * m.blocks[1].W.grad.data)


def test_state_dict_holds_copies():
    m = MLP((3, 2))
    m(x_in())
    sd = m.state_dict()
    kept = {k: v.copy() for k, v in sd.items()}
    for p in m.params():
        p.data += 1.0
    for k in sd:
        np.testing.assert_array_equal(sd[k], kept[k])
        assert not np.shares_memory(sd[k], m.named_params()[k].data)


def test_a_loaded_model_shares_no_array_with_the_dict_it_loaded():
    source = MLP((3, 2))
    source(x_in())
    sd = {k: v + 1 for k, v in source.state_dict().items()}
    sized, unsized = MLP((3, 2)), MLP((3, 2))
    sized(x_in())
    for m in (sized, unsized):
        m.load_state_dict(sd)
        for k, p in m.named_params().items():
            assert not np.shares_memory(sd[k], p.data), k


def test_round_trip_gives_identical_outputs_and_unsized_layers_take_shapes():
    a = MLP((5, 3))
    x = x_in(d=4)
    ya = a(x).data
    b = MLP((5, 3))  # unsized: W has no data until loaded
    assert b.l0.W.data is None
    assert b.load_state_dict(a.state_dict()) == ([], [])
    np.testing.assert_array_equal(b(x).data, ya)
    assert b.l0.W.data.dtype == np.float32


def test_load_casts_to_each_parameter_dtype():
    a = MLP((3,))
    a(x_in())
    sd = {k: v.astype(np.float64) + 0.25 for k, v in a.state_dict().items()}
    a.load_state_dict(sd)
    for k, p in a.named_params().items():
        assert p.data.dtype == np.float32
        np.testing.assert_array_equal(p.data, sd[k].astype(np.float32))


def test_values_beyond_the_parameter_dtype_are_refused_and_change_nothing():
    m = MLP((3, 2))
    m(x_in())
    before = snapshot(m)
    d = {k: v.astype(np.float64) + 1 for k, v in m.state_dict().items()}
    d["l1.W"][0, 0] = 4e38  # float32's largest is 3.4e38
    with pytest.raises(ValueError, match=r"'l1.W' holds 1 finite value\(s\) beyond the range"):
        m.load_state_dict(d)
    after = snapshot(m)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d.pop("l0.b"), r"missing: \['l0.b'\]"),
        (lambda d: d.update(extra=np.zeros(2)), r"not in the model: \['extra'\]"),
        (lambda d: d.update({"l1.W": np.zeros((3, 3))}), r"l1.W: model \(3, 2\), given \(3, 3\)"),
        (lambda d: d.update({"l1.b": np.array(["a", "b"])}), r"l1.b: expected a numeric array"),
        (lambda d: d.update({"l1.b": [0.0, 0.0]}), r"l1.b: expected a numeric array, got list"),
    ],
)
def test_a_bad_state_dict_is_refused_and_changes_nothing(edit, words):
    m = MLP((3, 2))
    m(x_in())
    before = snapshot(m)
    d = {k: v + 1 for k, v in m.state_dict().items()}
    edit(d)
    with pytest.raises(ValueError, match=r"MLP.load_state_dict: the state dict does not fit"):
        m.load_state_dict(d)
    with pytest.raises(ValueError, match=words):
        m.load_state_dict(d)
    after = snapshot(m)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])


def test_load_needs_a_mapping():
    with pytest.raises(TypeError, match=r"load_state_dict\(d\): d must be a mapping.*got list"):
        MLP((2,)).load_state_dict([1, 2])


def test_non_strict_load_skips_and_reports_names():
    a, b = MLP((3, 2)), MLP((3, 2))
    a(x_in())
    b(x_in())
    d = a.state_dict()
    del d["l1.b"]
    d["other"] = np.zeros(1)
    old_b = b.l1.b.data.copy()
    assert b.load_state_dict(d, strict=False) == (["l1.b"], ["other"])
    np.testing.assert_array_equal(b.l0.W.data, a.l0.W.data)
    np.testing.assert_array_equal(b.l1.b.data, old_b)


def test_state_dict_round_trip_across_backends(backend, to_np):
    a = MLP((3, 2)).to(backend)
    a(as_numpy(x_in()) if backend.name == "numpy" else backend.from_numpy(x_in()))
    b = MLP((3, 2))
    b(x_in())
    b.load_state_dict(a.state_dict())  # backend arrays into a numpy model
    for k, p in b.named_params().items():
        assert backend_of(p.data).name == "numpy"
        np.testing.assert_array_equal(p.data, to_np(a.named_params()[k].data))
    c = MLP((3, 2)).to(backend)
    c(backend.from_numpy(x_in()))
    c.load_state_dict(b.state_dict())  # numpy arrays into a model on the backend under test
    for k, p in c.named_params().items():
        assert backend_of(p.data).name == backend.name
        np.testing.assert_array_equal(to_np(p.data), b.named_params()[k].data)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_models_copy_after_a_forward_and_backward_pass(how):
    m = Blocks()
    x = x_in()
    y = m(x)
    (y * y).sum().backward()
    twin = pickle.loads(pickle.dumps(m)) if how == "pickle" else copy.deepcopy(m)
    np.testing.assert_array_equal(twin(x).data, m(x).data)
    assert twin.blocks[0].W is not m.blocks[0].W
    assert twin.tied is twin.head.W  # tying survives the copy
    np.testing.assert_array_equal(twin.head.W.grad.data, m.head.W.grad.data)


def test_rnn_copy_keeps_the_hidden_state_without_the_graph():
    r = L.RNN(3, in_size=2)
    r(x_in(1))
    r(x_in(1, seed=1))
    twin = copy.deepcopy(r)
    assert twin.h.creator is None
    np.testing.assert_array_equal(twin.h.data, r.h.data)
    np.testing.assert_array_equal(twin(x_in(1, seed=2)).data, r(x_in(1, seed=2)).data)


def test_layer_without_super_init_still_tracks_lists():
    class Bare(Layer):
        def __init__(self):
            self.parts = (L.Linear(2, in_size=2),)

        def forward(self, x):
            return self.parts[0](x)

    assert list(Bare().named_params()) == ["parts.0.W", "parts.0.b"]


@settings(max_examples=60, deadline=None)
@given(
    drop=st.sets(
        st.sampled_from(["head.W", "head.b", "blocks.0.W", "blocks.0.b", "blocks.1.W", "scale"])
    ),
    extra=st.sets(st.sampled_from(["head.V", "blocks.2.W", "other"]), max_size=2),
    dtype=st.sampled_from([np.float32, np.float64, np.int32, np.float16]),
    strict=st.booleans(),
)
def test_missing_and_extra_names_with_strict_on_and_off(drop, extra, dtype, strict):
    source = Blocks()
    for i, p in enumerate(source.params()):
        p.data = (np.arange(p.data.size).reshape(p.data.shape) + i).astype(np.float32)
    d = {k: v.astype(dtype) for k, v in source.state_dict().items() if k not in drop}
    d.update({k: np.zeros(2, np.float32) for k in extra})
    target = Blocks()
    before = snapshot(target)
    if strict and (drop or extra):
        with pytest.raises(ValueError, match=r"does not fit Blocks .* Nothing was changed"):
            target.load_state_dict(d, strict=True)
        got = snapshot(target)
        assert all(np.array_equal(got[k], before[k]) for k in before)
        return
    result = target.load_state_dict(d, strict=strict)
    assert sorted(result.missing) == sorted(drop) and sorted(result.unexpected) == sorted(extra)
    want = snapshot(source)
    for k, v in snapshot(target).items():
        assert v.dtype == np.float32  # the parameter's dtype stays, whatever the file's
        np.testing.assert_array_equal(v, before[k] if k in drop else want[k], err_msg=k)


def _sized(sizes):
    model = MLP(sizes)
    model(np.ones((1, 4), np.float32))
    return model


def test_strict_false_is_advised_only_when_names_alone_differ():
    """Keys that all match but shapes that do not were met with "or strict=False to load
    the names that match", and strict=False then failed with the same shapes."""
    src = _sized((3, 2)).state_dict()
    wider = _sized((5, 2))
    before = [p.data.copy() for p in wider.params()]
    for strict in (True, False):
        with pytest.raises(ValueError) as info:
            wider.load_state_dict(src, strict=strict)
        msg = str(info.value)
        assert "l0.W: model (4, 5), given (4, 3)" in msg and "l1.W: model (5, 2)" in msg
        assert "to load the names that match" not in msg
    assert msg.endswith("pass the state_dict() of the same architecture.")
    with pytest.raises(
        ValueError, match=r"\(strict=False skips only names, never a parameter of another shape"
    ):
        wider.load_state_dict(src)
    for p, b in zip(wider.params(), before):
        np.testing.assert_array_equal(p.data, b)
    deeper = _sized((3, 2, 2))
    with pytest.raises(
        ValueError,
        match=r"\(missing: \['l2\.W', 'l2\.b'\]\)\. Nothing was changed; pass the state_dict\(\) "
        r"of the same architecture or strict=False to load the names that match\.$",
    ):
        deeper.load_state_dict(src)
    assert deeper.load_state_dict(src, strict=False).missing == ["l2.W", "l2.b"]
    np.testing.assert_array_equal(deeper.l0.W.data, src["l0.W"])


class SizedAndLazy(Model):
    """A sized layer next to a lazily sized one (``lazy``), as after a partial build."""

    def __init__(self, lazy):
        super().__init__()
        self.sized = L.Linear(2, in_size=2)
        self.lazy = lazy

    def forward(self, x):
        return self.lazy(x)


LAZY_SHAPES = [
    # (the unsized layer, a W its arguments refuse, a W they take)
    (lambda: L.Linear(3), (4, 5), (4, 3)),  # out_size 3, not 5
    (lambda: L.Linear(3), (4,), (4, 3)),  # a vector is no (in, out) matrix
    (lambda: L.Conv2d(8, 3), (4, 2, 3, 3), (8, 2, 3, 3)),  # out_channels 8, not 4
    (lambda: L.Conv2d(8, 3), (8, 2, 5, 5), (8, 2, 3, 3)),  # kernel 3, not 5
    (lambda: L.Conv2d(8, (3, 1)), (8, 2, 1, 3), (8, 2, 3, 1)),  # (KH, KW) = (3, 1)
    (lambda: L.Deconv2d(8, 3), (2, 4, 3, 3), (2, 8, 3, 3)),  # (in, out, KH, KW)
]


@pytest.mark.parametrize(("make", "bad", "good"), LAZY_SHAPES)
def test_an_unsized_layer_refuses_a_weight_its_arguments_do_not_allow(make, bad, good):
    # Linear(3) / Conv2d(8, 3) fix every axis of W but the input's: a W of another out
    # size or kernel would make the layer compute something its arguments do not say
    model = SizedAndLazy(make())
    before = {k: p.data.tobytes() for k, p in model.named_params().items() if p.data is not None}
    d = {
        "sized.W": np.full((2, 2), 7, np.float32),
        "sized.b": np.full(2, 7, np.float32),
        "lazy.W": np.ones(bad, np.float32),
    }
    if model.lazy.b is not None:
        d["lazy.b"] = np.zeros(model.lazy.b.shape, np.float32)
    with pytest.raises(ValueError, match=r"lazy\.W: given .*expected .*as its layer's arguments"):
        model.load_state_dict(d)
    assert model.lazy.W.data is None
    assert before == {
        k: p.data.tobytes() for k, p in model.named_params().items() if p.data is not None
    }
    with pytest.raises(ValueError, match=r"lazy\.W: given"):  # strict=False skips names only
        model.load_state_dict(d, strict=False)
    assert model.lazy.W.data is None
    d["lazy.W"] = np.arange(np.prod(good), dtype=np.float64).reshape(good)
    assert model.load_state_dict(d) == ([], [])
    assert model.lazy.W.data.shape == good and model.lazy.W.data.dtype == np.float32
    np.testing.assert_array_equal(model.sized.W.data, np.full((2, 2), 7, np.float32))


def _sized_mlp(seed):
    np.random.seed(seed)
    model = MLP((3, 2))
    model(np.ones((1, 4), np.float32))
    return model


def _values(model):
    return {k: np.array(p.data, copy=True) for k, p in model.named_params().items()}


def test_a_path_given_as_the_state_dict_points_to_the_file_loaders(tmp_path):
    # "d must be a mapping ..., got str": a PyTorch user passes the file
    model = _sized_mlp(0)
    path = model.save_weights(str(tmp_path / "w.npz")) or str(tmp_path / "w.npz")
    for d in (path, tmp_path / "w.npz"):
        with pytest.raises(TypeError) as info:
            model.load_state_dict(d)
        assert str(info.value) == (
            f"MLP.load_state_dict(d): d is a path ({d!r}), not a state dict (the mapping "
            f"state_dict() returns); to load a file, use load_weights(path) for a weight "
            f"file or zerograd_nn.checkpoint.load_checkpoint(path, model=...) for a "
            f"checkpoint."
        )


def _save_weights(model, path):
    model.save_weights(str(path))


def _save_checkpoint(model, path):
    from zerograd_nn.checkpoint import save_checkpoint

    save_checkpoint(path, model=model)


@pytest.mark.parametrize(
    "save, advice",
    [
        # np.load of a weight file has DeZero's 'l0/W' names: the error advised
        # strict=False, which then loaded nothing
        (
            _save_weights,
            "these are a weight file's names ('l0/W' for 'l0.W'): load the file with "
            "load_weights(path).",
        ),
        (
            _save_checkpoint,
            "these are a checkpoint's arrays: load the file with "
            "zerograd_nn.checkpoint.load_checkpoint(path, model=...).",
        ),
    ],
    ids=["weight file", "checkpoint"],
)
def test_a_files_arrays_given_as_the_state_dict_point_to_its_loader(tmp_path, save, advice):
    save(_sized_mlp(0), tmp_path / "f.npz")
    dst = _sized_mlp(1)
    before = _values(dst)
    with np.load(tmp_path / "f.npz") as npz, pytest.raises(ValueError) as info:
        dst.load_state_dict(npz)
    msg = str(info.value)
    assert "strict=False" not in msg
    assert msg.endswith("Nothing was changed; " + advice)
    for k, a in _values(dst).items():
        np.testing.assert_array_equal(a, before[k])
