"""vmap: axes, nesting, batched values, the loop fallback, composition and bad input.

Values of every core function under vmap (against a loop) are in test_func_cases.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Function, Variable, modes
from zerograd.backends import as_array_of, as_numpy, backend_of
from zerograd.func import (
    BatchedVariable,
    VmapFallbackWarning,
    batching_rule,
    grad,
    hessian,
    jacrev,
    vmap,
)
from zerograd.func.rules import rule_for


@pytest.fixture(autouse=True)
def _no_mode_left_behind():
    yield
    assert modes.switch.on == 0 and modes.current() is None


def loop(f, *args, axes=None):
    """Stack f over the samples: the reference vmap must equal."""
    axes = axes or [0] * len(args)
    n = next(np.shape(as_numpy(a))[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = []
    for i in range(n):
        sample = [a if ax is None else _take(a, i, ax) for a, ax in zip(args, axes)]
        outs.append(as_numpy(f(*[Variable(s) if hasattr(s, "shape") else s for s in sample])))
    return np.stack(outs)


def _take(a, i, axis):
    return as_array_of(np.take(as_numpy(a), i, axis=axis), backend_of(a))


def test_in_axes_none_int_negative_and_out_axes(rand):
    x, w = rand(3, 4, seed=1), rand(4, seed=2)
    f = lambda x, w: F.tanh(x * w)  # noqa: E731
    np.testing.assert_allclose(
        as_numpy(vmap(f, in_axes=(0, None))(x, w)), loop(f, x, w, axes=[0, None])
    )
    xt = as_array_of(as_numpy(x).T.copy(), backend_of(x))
    np.testing.assert_allclose(
        as_numpy(vmap(f, in_axes=(-1, None))(xt, w)), loop(f, x, w, axes=[0, None])
    )
    got = vmap(f, in_axes=(1, None), out_axes=1)(xt, w)
    np.testing.assert_allclose(as_numpy(got), loop(f, x, w, axes=[0, None]).T)


def test_in_axes_for_a_dict_of_parameters(rand):
    params = {"w": rand(4, 2, seed=1), "b": rand(2, seed=2)}
    xs = rand(5, 4, seed=3)
    f = lambda p, x: F.sum(F.tanh(x @ p["w"] + p["b"]))  # noqa: E731
    got = vmap(f, in_axes=(None, 0))(params, xs)
    want = [as_numpy(f(params, Variable(_take(xs, i, 0)))) for i in range(5)]
    np.testing.assert_allclose(as_numpy(got), want)
    got = vmap(f, in_axes=({"w": None, "b": None}, 0))(params, xs)
    np.testing.assert_allclose(as_numpy(got), want)


def test_outputs_that_do_not_depend_on_the_batch_are_repeated(rand):
    x = rand(3, 2)
    a, b, c = vmap(lambda x: (x * 2.0, F.sum(rand(2, seed=9)), 7.0))(x)
    np.testing.assert_allclose(as_numpy(a), 2 * as_numpy(x))
    assert as_numpy(b).shape == (3,) and np.ptp(as_numpy(b)) == 0
    np.testing.assert_array_equal(as_numpy(c), [7.0, 7.0, 7.0])
    same = vmap(lambda x: (x, 5.0), out_axes=(0, None))(x)
    assert same[1] == 5.0


def test_arrays_in_give_arrays_and_variables_in_give_connected_variables(rand):
    x = rand(3, 2)
    out = vmap(lambda v: v * v)(x)
    assert type(out) is type(x)
    xv = Variable(x)
    y = vmap(lambda v: F.sum(v * v))(xv)
    assert isinstance(y, Variable) and not isinstance(y, BatchedVariable)
    F.sum(y).backward()
    np.testing.assert_allclose(as_numpy(xv.grad), 2 * as_numpy(x))


def test_nested_vmap_equals_a_double_loop(rand):
    a, b = rand(2, 3, seed=1), rand(4, 3, seed=2)
    f = lambda u, v: F.sum(u * v) + F.sin(u)[0]  # noqa: E731
    got = vmap(vmap(f, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    A, B = as_numpy(a), as_numpy(b)
    want = [[(A[i] * B[j]).sum() + np.sin(A[i][0]) for j in range(4)] for i in range(2)]
    np.testing.assert_allclose(as_numpy(got), want)


def test_vmap_of_grad_with_a_broadcast_argument_gives_per_sample_gradients(rand):
    w, xs = rand(3, seed=1), rand(5, 3, seed=2)
    loss = lambda w, x: F.sum(F.tanh(w * x) ** 2)  # noqa: E731
    got = vmap(grad(loss), in_axes=(None, 0))(w, xs)
    want = np.stack([as_numpy(grad(loss)(w, _take(xs, i, 0))) for i in range(5)])
    np.testing.assert_allclose(as_numpy(got), want)


def test_grad_of_vmap_differentiates_the_whole_batch(rand):
    w, xs = rand(3, seed=1), rand(5, 3, seed=2)
    f = lambda w: F.sum(vmap(lambda x: F.sum(F.tanh(w * x)), in_axes=0)(xs))  # noqa: E731
    got = grad(f)(w)
    W, X = as_numpy(w), as_numpy(xs)
    want = ((1 - np.tanh(W * X) ** 2) * X).sum(0)
    np.testing.assert_allclose(as_numpy(got), want)


def test_vmap_of_hessian_and_of_jacrev(rand):
    xs = rand(3, 2, seed=4)
    f = lambda x: F.sum(x**3) + x[0] * x[1]  # noqa: E731
    got = vmap(hessian(f))(xs)
    X = as_numpy(xs)
    want = np.stack([np.diag(6 * x) + np.array([[0, 1], [1, 0]]) for x in X])
    np.testing.assert_allclose(as_numpy(got), want)
    jac = vmap(jacrev(lambda x: x * x))(xs)
    np.testing.assert_allclose(as_numpy(jac), np.stack([np.diag(2 * x) for x in X]))


def test_a_batched_variable_looks_like_one_sample(rand):
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, len=len(x), type=type(x))
        seen.update(data_shape=x.data.shape, repr=repr(x))
        return x

    vmap(f)(rand(5, 3, 2))
    assert seen["shape"] == (3, 2) and seen["ndim"] == 2 and seen["size"] == 6 and seen["len"] == 3
    assert seen["type"] is BatchedVariable and seen["data_shape"] == (3, 2)
    assert "5 samples of shape (3, 2)" in seen["repr"]


def test_masks_from_the_raw_data_stay_batched(rand):
    """Code that reads x.data for a mask (book style) is batched too."""
    x = rand(4, 3)
    f = lambda x: x * (x.data > 0) + Variable(x.data) * 0.5  # noqa: E731
    np.testing.assert_allclose(as_numpy(vmap(f)(x)), loop(f, x))
    g = lambda x: F.reshape(x.data, (3, 1)) * 2.0  # noqa: E731
    np.testing.assert_allclose(as_numpy(vmap(g)(x)), loop(g, x))


@pytest.mark.parametrize(
    "read",
    [
        lambda x: float(x.sum()),
        lambda x: x.sum().item(),
        lambda x: x.numpy(),
        lambda x: np.asarray(x),
        lambda x: bool(x.sum()),
        lambda x: np.asarray(x.data),
    ],
)
def test_reading_a_value_inside_vmap_is_one_clear_error(rand, read):
    with pytest.raises(TypeError, match=r"inside vmap: the function runs on the whole batch of 4"):
        vmap(read)(rand(4, 3))


def test_backward_inside_vmap_points_to_grad(rand):
    with pytest.raises(TypeError, match=r"backward\(\) of a batched Variable.*zerograd.func.grad"):
        vmap(lambda x: F.sum(x * x).backward())(rand(4, 3))


def test_a_batched_value_that_escapes_is_refused_later(rand):
    kept = []
    vmap(lambda x: kept.append(x) or x)(rand(4, 3))
    with pytest.raises(TypeError, match=r"escaped the vmap call"):
        F.sin(kept[0])


class Twice(Function):
    """A user Function with a derivative and no batching rule."""

    def forward(self, x):
        return 2.0 * x * x

    def backward(self, gy):
        (x,) = self.inputs
        return 4.0 * x * gy


def test_a_function_without_rule_runs_per_sample_with_one_warning(rand):
    x = rand(4, 3)
    f = lambda x: Twice()(F.sin(Twice()(x)))  # noqa: E731
    with pytest.warns(VmapFallbackWarning) as caught:
        got = vmap(f)(x)
    messages = [str(w.message) for w in caught if w.category is VmapFallbackWarning]
    assert len(messages) == 1 and "Twice has no batching rule" in messages[0]
    np.testing.assert_allclose(as_numpy(got), loop(f, x))
    with pytest.warns(VmapFallbackWarning):
        per_sample = vmap(grad(lambda x: F.sum(f(x))))(x)
    want = np.stack([as_numpy(grad(lambda v: F.sum(f(v)))(as_numpy(x)[i])) for i in range(4)])
    np.testing.assert_allclose(as_numpy(per_sample), want)


def test_a_registered_rule_replaces_the_loop(rand):
    class Halve(Function):
        def forward(self, x):
            return x * 0.5

        def backward(self, gy):
            return gy * 0.5

    @batching_rule(Halve)
    def _halve(fn, batch):
        return fn(batch.xs[0])

    assert rule_for(Halve) is _halve
    x = rand(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        got = vmap(lambda v: Halve()(v))(x)
    np.testing.assert_allclose(as_numpy(got), 0.5 * as_numpy(x))


def test_a_float16_mean_has_a_rule_and_averages_each_sample():
    """F.mean of float16 data is its own function (Mean, numpy's mean): without a rule it
    would run once per sample, with a warning, where the sum it replaced ran once."""
    x = np.random.default_rng(6).uniform(0.0, 2.0, (4, 3, 5)).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        per_row = vmap(lambda v: F.mean(v, axis=-1))(x)
        per_sample = vmap(grad(lambda v: F.mean(v)))(x)
    assert rule_for(F.Mean) is rule_for(F.Sum)
    want = x.astype(np.float64).mean(axis=-1)
    np.testing.assert_allclose(as_numpy(per_row), want, rtol=1e-3)
    assert as_numpy(per_row).dtype == np.float16
    np.testing.assert_array_equal(as_numpy(per_sample), np.full(x.shape, np.float16(1 / 15)))


def test_a_rule_returning_the_wrong_shape_is_named(rand):
    class Odd(Function):
        def forward(self, x):
            return x

        def backward(self, gy):
            return gy

    batching_rule(Odd)(lambda fn, batch: F.sum(batch.xs[0]))
    with pytest.raises(RuntimeError, match=r"batching rule of Odd returned \(\)"):
        vmap(lambda v: Odd()(v))(rand(4, 3))


def test_indexing_with_per_sample_ids(rand):
    """An embedding lookup W[ids] with ids per sample, and per-sample rows of x."""
    W = rand(5, 2, seed=3)
    ids = np.array([[0, 4], [2, 2], [1, 3]])
    got = vmap(lambda i: F.get_item(W, i), in_axes=0)(ids)
    np.testing.assert_allclose(as_numpy(got), as_numpy(W)[ids])
    x = rand(3, 5)
    got = vmap(lambda x, i: F.get_item(x, i))(x, ids)
    np.testing.assert_allclose(as_numpy(got), np.stack([as_numpy(x)[k][ids[k]] for k in range(3)]))
    g = vmap(grad(lambda x, i: F.sum(F.get_item(x, i) ** 2)))(x, ids)
    want = np.zeros((3, 5))
    for k in range(3):
        np.add.at(want[k], ids[k], 2 * as_numpy(x)[k][ids[k]])
    np.testing.assert_allclose(as_numpy(g), want)


@pytest.mark.parametrize(
    "index",
    [
        # a numpy integer apart from the array, as long as the batch: silently wrong values
        (np.int64(1), slice(None), np.array([0, 2, 1])),
        (np.array(1), slice(None), np.array([0, 2])),  # a 0-d array, apart from the array
        (np.array([0, 1, 1]), Ellipsis, np.array(2)),
        (1, slice(None), [2, 0]),
    ],
    ids=["np.int64", "0-d array", "0-d array after ...", "int"],
)
def test_indexing_with_advanced_indices_apart_follows_numpy_per_sample(index):
    """numpy moves apart advanced indices' axes first; integer scalars count as advanced.

    The rule put the batch axis behind those axes where a numpy integer or a 0-d array
    stood apart from an index array: vmap failed with "the batching rule of GetItem
    returned ...", or, where those axes were as long as the batch, gave wrong values.
    """
    x = np.arange(72.0).reshape(3, 2, 4, 3)
    want = np.stack([x[k][index] for k in range(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = vmap(lambda v: v[index])(Variable(x))
        g = vmap(grad(lambda v: F.sum(v[index] * v[index])))(Variable(x))
    assert got.shape == want.shape
    np.testing.assert_array_equal(as_numpy(got), want)
    expected = np.zeros_like(x)
    for k in range(3):
        np.add.at(expected[k], index, 2 * x[k][index])
    np.testing.assert_array_equal(as_numpy(g), expected)


# -- torch.func's spellings: in_dims, out_dims, randomness, chunk_size ----------------------
def test_in_dims_and_out_dims_are_in_axes_and_out_axes(rand):
    """torch.func's names mean what JAX's do: per-argument axes, None, negative axes."""
    x, w = rand(4, 3, seed=1), rand(3, seed=2)
    f = lambda x, w: (F.tanh(x * w), F.sum(x))  # noqa: E731
    xt = as_array_of(as_numpy(x).T.copy(), backend_of(x))
    got = vmap(f, in_dims=(-1, None), out_dims=(1, 0))(xt, w)
    want = vmap(f, in_axes=(-1, None), out_axes=(1, 0))(xt, w)
    X, W = as_numpy(x), as_numpy(w)
    np.testing.assert_allclose(as_numpy(got[0]), np.tanh(X * W).T)
    np.testing.assert_allclose(as_numpy(got[1]), X.sum(axis=1))
    for g, h in zip(got, want):
        np.testing.assert_array_equal(as_numpy(g), as_numpy(h))
    same = vmap(lambda x: (x, 5.0), in_dims=0, out_dims=(0, None))(x)
    assert same[1] == 5.0


@pytest.mark.parametrize(
    "given, text",
    [
        (
            {"in_axes": 0, "in_dims": 0},
            "vmap: got in_axes=0 and in_dims=0, which are one argument (in_dims is "
            "torch.func's name for in_axes); give one of them.",
        ),
        (
            {"out_axes": None, "out_dims": 1},
            "vmap: got out_axes=None and out_dims=1, which are one argument (out_dims is "
            "torch.func's name for out_axes); give one of them.",
        ),
    ],
)
def test_both_spellings_at_once_are_one_type_error(given, text):
    with pytest.raises(TypeError) as caught:
        vmap(lambda a: a, **given)
    assert str(caught.value) == text


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5, 7])
def test_chunk_size_gives_the_values_of_the_whole_batch(rand, chunk_size):
    """The batch runs chunk_size samples at a time: every size, a short last chunk, a chunk
    larger than the batch, out_axes moved, an output that is not batched."""
    x, c = rand(5, 3, seed=1), rand(2, seed=2)
    f = lambda x, c: (F.tanh(x) * c[0], F.sum(x), c * 2.0)  # noqa: E731
    a, b, d = vmap(f, (0, None), (-1, 0, None), chunk_size=chunk_size)(x, c)
    X, C = as_numpy(x), as_numpy(c)
    assert type(a) is type(x) and type(b) is type(x)
    np.testing.assert_allclose(as_numpy(a), (np.tanh(X) * C[0]).T)
    np.testing.assert_allclose(as_numpy(b), X.sum(axis=1))
    np.testing.assert_allclose(as_numpy(d), C * 2.0)


def test_chunk_size_keeps_variables_connected_and_differentiable(rand):
    x = rand(5, 2, seed=3)
    xv = Variable(x)
    y = vmap(lambda v: F.sum(v**3), chunk_size=2)(xv)
    assert isinstance(y, Variable) and not isinstance(y, BatchedVariable)
    F.sum(y).backward()
    np.testing.assert_allclose(as_numpy(xv.grad), 3 * as_numpy(x) ** 2)
    g = grad(lambda x: F.sum(vmap(lambda v: F.sum(F.sin(v)), chunk_size=3)(x)))(x)
    np.testing.assert_allclose(as_numpy(g), np.cos(as_numpy(x)))
    per_sample = vmap(grad(lambda v: F.sum(v**3)), chunk_size=2)(x)
    np.testing.assert_allclose(as_numpy(per_sample), 3 * as_numpy(x) ** 2)
    nested = vmap(vmap(lambda v: v * 2.0, chunk_size=2), in_dims=1, chunk_size=1)(x)
    np.testing.assert_allclose(as_numpy(nested), 2 * as_numpy(x).T)


@pytest.mark.parametrize(
    "chunk_size, error, text",
    [
        (0, ValueError, "vmap: chunk_size must be a positive int (>= 1), got 0"),
        (-2, ValueError, "vmap: chunk_size must be a positive int (>= 1), got -2"),
        (2.0, TypeError, "vmap: chunk_size must be a positive int, got 2.0 (float)"),
        (True, TypeError, "vmap: chunk_size must be a positive int, got True (bool)"),
    ],
)
def test_a_bad_chunk_size_is_refused_when_vmap_is_called(chunk_size, error, text):
    with pytest.raises(error) as caught:
        vmap(lambda a: a, chunk_size=chunk_size)
    assert str(caught.value) == text


class Noise(Function):
    """Adds standard-normal noise: a function that draws, with no batching rule."""

    def forward(self, x):
        return x + backend_of(x).randn(*x.shape, dtype=x.dtype)

    def backward(self, gy):
        return gy


@pytest.mark.parametrize("chunk_size", [None, 2])
def test_a_function_that_draws_draws_for_each_sample_as_randomness_different(rand, chunk_size):
    x = rand(6, 40) * 0.0
    with pytest.warns(VmapFallbackWarning):
        out = vmap(lambda v: Noise()(v), randomness="different", chunk_size=chunk_size)(x)
    rows = as_numpy(out)
    assert rows.shape == (6, 40) and np.all(np.std(rows, axis=1) > 0.1)
    assert len({r.tobytes() for r in rows}) == 6, "every sample got its own draw"


@pytest.mark.parametrize(
    "randomness, error, text",
    [
        (
            "error",
            ValueError,
            "vmap: randomness='error' (torch.func's default) is not available: inside vmap, "
            "a zerograd function that draws random numbers (dropout) draws them for each "
            "sample on its own, as torch.func's randomness='different' does, and no draw is "
            "refused. Leave randomness out (or write 'different'), or draw outside vmap.",
        ),
        (
            "same",
            ValueError,
            "vmap: randomness='same' is not available: inside vmap, a zerograd function that "
            "draws random numbers (dropout) draws them for each sample on its own, as "
            "torch.func's randomness='different' does. For one draw shared by every sample, "
            "draw it outside vmap and pass it with in_axes None (a dropout mask m: "
            "x * m / (1 - p)).",
        ),
        (
            "differnt",
            ValueError,
            "vmap: randomness must be 'different' (torch.func's 'error' and 'same' are not "
            "available), got 'differnt'. randomness is torch.func's fourth parameter, "
            "vmap(f, in_dims, out_dims, randomness); JAX's axis_name, its fourth, is not "
            "supported (zerograd's vmap has no named axes): leave it out.",
        ),
        (None, TypeError, "vmap: randomness must be a string ('different'), got None (NoneType)"),
    ],
)
def test_randomness_other_than_different_is_refused(randomness, error, text):
    with pytest.raises(error) as caught:
        vmap(lambda a: a, randomness=randomness)
    assert str(caught.value) == text


def test_jaxs_axis_name_in_fourth_place_is_named_as_not_supported(rand):
    """JAX's vmap(f, in_axes, out_axes, axis_name): zerograd's fourth parameter is
    torch.func's randomness, and 'batch' was refused as a randomness with no word of JAX."""
    with pytest.raises(ValueError) as caught:
        vmap(lambda a: a * 2.0, 0, 0, "batch")
    assert str(caught.value) == (
        "vmap: randomness must be 'different' (torch.func's 'error' and 'same' are not "
        "available), got 'batch'. randomness is torch.func's fourth parameter, "
        "vmap(f, in_dims, out_dims, randomness); JAX's axis_name, its fourth, is not "
        "supported (zerograd's vmap has no named axes): leave it out."
    )
    x = rand(3, 2)
    np.testing.assert_array_equal(as_numpy(vmap(lambda a: a * 2.0, 0, 0)(x)), as_numpy(x * 2.0))


@pytest.mark.parametrize(
    "keyword, value, text",
    [
        (
            "axis_name",
            "i",
            "vmap: axis_name= is JAX's keyword, not zerograd's: zerograd's vmap has no named "
            "axes, so nothing inside f reduces over the batch by name (JAX's psum(x, 'i')); "
            "leave it out, and reduce the batched result outside instead: "
            "F.sum(vmap(f)(xs), axis=0).",
        ),
        (
            "spmd_axis_name",
            "i",
            "vmap: spmd_axis_name= is JAX's keyword, not zerograd's: zerograd's vmap has no "
            "named axes, so nothing inside f reduces over the batch by name (JAX's "
            "psum(x, 'i')); leave it out, and reduce the batched result outside instead: "
            "F.sum(vmap(f)(xs), axis=0).",
        ),
        (
            "axis_size",
            3,
            "vmap: axis_size= is JAX's keyword, not zerograd's: the batch size is read from the "
            "batched arguments, of which there must be at least one (an in_axes entry that is "
            "not None); leave it out.",
        ),
        ("in_axis", 0, "vmap() got an unexpected keyword argument 'in_axis'"),
    ],
)
def test_jaxs_keywords_are_refused_saying_what_vmap_does_instead(rand, keyword, value, text):
    """jax.vmap(f, in_axes, out_axes, axis_name=None, axis_size=None, spmd_axis_name=None):
    each keyword got Python's bare "unexpected keyword argument" (the fourth-place
    axis_name already named itself)."""
    with pytest.raises(TypeError) as caught:
        vmap(lambda a: a * 2.0, in_axes=0, **{keyword: value})
    assert str(caught.value) == text
    # what the message says instead: leave it out, reduce outside
    xs = rand(3, 2)
    total = F.sum(vmap(lambda a: a * 2.0)(xs), axis=0)
    np.testing.assert_allclose(as_numpy(total.data), 2.0 * as_numpy(xs).sum(axis=0))


# -- bad input -----------------------------------------------------------------------------
def test_batch_sizes_that_differ_are_named_with_their_sizes(rand):
    with pytest.raises(
        ValueError,
        match=r"differ in size along their in_axes: argument 0 \(axis 0\): 3, "
        r"argument 1\['x'\] \(axis 1\): 4; give them one batch size",
    ):
        vmap(lambda a, d: a, in_axes=(0, {"x": 1}))(rand(3, 2), {"x": rand(2, 4)})


def test_in_axes_of_the_wrong_length(rand):
    with pytest.raises(
        ValueError, match=r"in_axes has 1 entries but the function got 2 positional"
    ):
        vmap(lambda a, b: a, in_axes=(0,))(rand(3), rand(3))


def test_in_axes_that_do_not_fit(rand):
    with pytest.raises(
        ValueError, match=r"in_axes 2 is out of range for argument 0, which has 2 axes"
    ):
        vmap(lambda a: a, in_axes=2)(rand(3, 2))
    with pytest.raises(ValueError, match=r"in_axes\[0\] has 1 entries but the argument has 2"):
        vmap(lambda p: p, in_axes=((0,),))((rand(3), rand(3)))
    with pytest.raises(ValueError, match=r"no argument is batched"):
        vmap(lambda a: a, in_axes=None)(rand(3))
    with pytest.raises(TypeError, match=r"in_axes must be an int, None, or a tuple"):
        vmap(lambda a: a, in_axes="0")
    with pytest.raises(TypeError, match=r"out_axes must be an int"):
        vmap(lambda a: a, out_axes=1.5)


def test_out_axes_none_for_a_batched_output(rand):
    with pytest.raises(ValueError, match=r"output is batched, but out_axes gives it None"):
        vmap(lambda a: a * 2.0, out_axes=None)(rand(3))


@pytest.mark.parametrize(
    "shapes, in_axes, text",
    [
        (
            ((4, 2, 3), (4, 5, 2)),
            (0, 0),
            "matmul: shapes (2, 3) and (5, 2) do not line up: the last axis of the first (3) "
            "must equal the second-to-last axis of the second (5).",
        ),
        (
            ((2, 3, 4), (5, 2)),
            (1, None),
            "matmul: shapes (2, 4) and (5, 2) do not line up: the last axis of the first (4) "
            "must equal the second-to-last axis of the second (5).",
        ),
        (
            ((4, 2, 2, 3), (4, 3, 3, 2)),
            (0, 0),
            "matmul: the batch axes of shapes (2, 2, 3) and (3, 3, 2) do not broadcast: (2,) "
            "against (3,) (every axis before the last two must be equal or 1, aligned from "
            "the right).",
        ),
    ],
    ids=["inner", "inner, one unbatched", "batch axes"],
)
def test_matmul_mismatch_inside_vmap_names_one_samples_shapes(shapes, in_axes, text, rand):
    """The function given to vmap sees samples: the error named the whole batch's shapes
    ((4, 2, 3) and (4, 5, 2)), which that function never saw."""
    a, b = (Variable(rand(*s, seed=i)) for i, s in enumerate(shapes))
    with pytest.raises(ValueError) as caught:
        vmap(lambda x, w: x @ w, in_axes=in_axes)(a, b)
    assert str(caught.value) == text
    assert a.creator is None and b.creator is None and a.grad is None and b.grad is None


@pytest.mark.parametrize("out_axes", [0, 1, -1])
def test_an_output_made_from_a_batched_values_data_is_batched(out_axes, backend):
    """``Variable(x.data)`` returned: vmap took it for a value shared by every sample."""
    x = as_array_of(np.arange(6.0).reshape(2, 3), backend)
    got = vmap(lambda v: Variable(v.data), out_axes=out_axes)(x)
    np.testing.assert_array_equal(as_numpy(got), np.moveaxis(as_numpy(x), 0, out_axes))
    got = vmap(lambda v: (v, Variable(v.data) * 2.0), out_axes=out_axes)(Variable(x))
    np.testing.assert_array_equal(as_numpy(got[1].data), 2 * as_numpy(got[0].data))
    xs = as_array_of(np.arange(6.0).reshape(2, 3, 1), backend)
    nested = vmap(vmap(lambda v: Variable(v.data)), out_axes=out_axes)(xs)
    np.testing.assert_array_equal(as_numpy(nested), np.moveaxis(as_numpy(xs), 0, out_axes))


_ONE_SAMPLE_ERRORS = {  # name: (the function, given a maker of ones, and its error)
    "sum_to": (lambda ones: lambda x: F.sum_to(x, (2,)), ValueError),
    "reshape": (lambda ones: lambda x: F.reshape(x, (5,)), ValueError),
    "broadcast_to": (lambda ones: lambda x: F.broadcast_to(x, (2, 5)), ValueError),
    "get_item": (lambda ones: lambda x: x[5], IndexError),
    "transpose": (lambda ones: lambda x: F.transpose(x, (0, 2)), ValueError),
    "add": (lambda ones: lambda x: x + ones(5), ValueError),
    "concatenate": (lambda ones: lambda x: F.concatenate([x, ones(2, 2)]), ValueError),
    "matmul": (lambda ones: lambda x: x @ ones(3, 2), ValueError),
}


@pytest.mark.parametrize("name", list(_ONE_SAMPLE_ERRORS))
@pytest.mark.parametrize("nested", [False, True], ids=["vmap", "vmap of vmap"])
def test_errors_inside_vmap_name_one_samples_shapes(name, nested, rand, backend):
    """The function given to vmap sees samples of shape (3, 4); its errors named the batch's
    shapes ("from (2, 4) to (2, 2)" for sum_to to (2,)), which it never saw. The error is
    now the one the function gives on one sample, and nothing was recorded."""
    make, error = _ONE_SAMPLE_ERRORS[name]
    f = make(lambda *shape: as_array_of(np.ones(shape), backend))
    x = Variable(rand(2, 7, 3, 4) if nested else rand(7, 3, 4))
    with pytest.raises(error) as expected:
        f(Variable(rand(3, 4)))
    with pytest.raises(error) as caught:
        vmap(vmap(f) if nested else f)(x)
    assert str(caught.value) == str(expected.value)
    assert "7" not in str(caught.value)  # the batch size is in no shape it names
    # the batch's error is not shown as the cause or context of this one
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None or caught.value.__suppress_context__
    assert x.creator is None and x.grad is None


def test_an_error_of_a_later_sample_is_that_samples(rand, backend):
    """A value that fails for sample 1 alone (an index out of range in its ids): the error
    is the one a loop over the samples meets first."""
    x = Variable(rand(2, 3))
    ids = as_array_of(np.array([[0, 1], [1, 7]]), backend)
    with pytest.raises(IndexError) as expected:
        F.get_item(Variable(rand(3)), ids[1, ...])
    with pytest.raises(IndexError) as caught:
        vmap(lambda v, i: v[i])(x, ids)
    assert str(caught.value) == str(expected.value)


@pytest.mark.parametrize("out_axes", [0, 1, None])
def test_an_output_computed_from_captured_arrays_alone_is_an_array(out_axes, rand):
    """vmap of arrays returning F.sum(captured_array), which does not depend on the batch:
    the docs say an output computed from arrays only comes back as an array; it came back
    a Variable (the function applied to the array recorded a graph of Constants)."""
    captured = rand(2, 3, seed=1)
    xs = rand(4, 5)

    def f(x):
        return F.exp(captured) * 2.0, x * 2.0

    got, batched = vmap(f, out_axes=(out_axes, 0))(xs)
    assert not isinstance(got, Variable) and not isinstance(batched, Variable)
    one = 2.0 * np.exp(as_numpy(captured))
    want = one if out_axes is None else np.stack([one] * 4, axis=out_axes)
    np.testing.assert_allclose(as_numpy(got), want)


def test_an_output_computed_from_a_captured_variable_stays_connected(rand):
    """A captured leaf Variable (or one with a graph) is not an array: the output stays a
    Variable whose backward reaches it."""
    w = Variable(rand(3, seed=1))
    got = vmap(lambda x: F.sum(w * w))(rand(4, 2))
    assert isinstance(got, Variable)
    F.sum(got).backward()
    np.testing.assert_allclose(as_numpy(w.grad.data), 4 * 2 * as_numpy(w.data))


def _numpy_defers(backend):
    """Skip where the backend's arrays refuse a batched array on their right.

    numpy hands its operators to the batched array (``__array_ufunc__``); the array API
    standard lets an array refuse an operand of another type (array-api-strict does).
    """
    if backend.name != "numpy":
        pytest.skip(f"{backend.name}'s arrays refuse other types on their right")


@pytest.mark.parametrize("reflected", [False, True])
def test_raw_array_arithmetic_inside_vmap_fails_as_on_one_sample(reflected, rand, backend):
    """A mask made from x.data that does not broadcast: the backend's error named the
    batch's shape ((7, 3, 4) against (5,)); it is now the error one sample gives."""
    if reflected:
        _numpy_defers(backend)
    other = as_array_of(np.ones(5), backend)

    def f(x):
        mask = (other + x.data) if reflected else (x.data + other)
        return x * (mask > 0)

    with pytest.raises(ValueError) as expected:
        f(Variable(rand(3, 4)))
    with pytest.raises(ValueError) as caught:
        vmap(f)(rand(7, 3, 4))
    assert str(caught.value) == str(expected.value)
    assert "7" not in str(caught.value)


def test_a_mask_with_an_array_on_the_left_of_x_data_is_batched(rand, backend):
    """``threshold < x.data`` with a numpy array on the left raised numpy.asarray()'s
    TypeError (numpy tried to read the batched array); it is a batched mask, as
    ``x.data > threshold`` is."""
    _numpy_defers(backend)
    thr = as_array_of(np.array([0.0, 0.5, -0.5, 1.0]), backend)
    xs = rand(5, 3, 4)
    got = vmap(lambda x: x * (thr < x.data) + (thr * x.data))(xs)
    want = np.stack(
        [
            loop_one * (as_numpy(thr) < loop_one) + as_numpy(thr) * loop_one
            for loop_one in as_numpy(xs)
        ]
    )
    np.testing.assert_allclose(as_numpy(got), want)
