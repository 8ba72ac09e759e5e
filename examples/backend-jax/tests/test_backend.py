"""The JAX backend seen through zerograd: found, classifying, converting, indexing, drawing."""

from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from zerograd_jax import JaxBackend

import zerograd
import zerograd.functions as F
from zerograd.backends import backend_of, get_array_module, list_backends, scatter_add


def test_found_through_the_entry_point(backend):
    assert isinstance(backend, JaxBackend)
    row = next(r for r in list_backends() if r.name == "jax")
    assert (row.plugin, row.distribution, row.device, row.available) == (
        "jax",
        "zerograd-jax",
        "cpu",
        True,
    )
    assert row.version == jax.__version__


def test_owns_jax_arrays_only_by_type_module(backend):
    assert backend.owns(type(jnp.zeros(2)))
    assert backend.owns(type(jnp.zeros(2).sum()))  # 0-d results are arrays too
    for other in (np.ndarray, np.float32, list, float, zerograd.Variable):
        assert not backend.owns(other)
    assert not backend.owns(type("Array", (), {"__module__": "jaxish"}))


def test_loading_the_plugin_does_not_import_jax():
    code = (
        "import sys, numpy as np\n"
        "from zerograd.backends import get_backend\n"
        "b = get_backend('jax')\n"
        "assert not b.owns(np.ndarray)\n"
        "print('jax' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_array_module_is_jax_numpy(backend):
    x = zerograd.Variable(backend.from_numpy(np.ones(2, np.float32)))
    assert backend.xp is jnp and get_array_module(x) is jnp and get_array_module(x.data) is jnp


def test_numpy_round_trip_copies_and_is_writable(backend):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = backend.from_numpy(a)
    a[0, 0] = 99.0  # the JAX array does not share memory with its source
    back = backend.to_numpy(x)
    assert back.dtype == np.float32 and back[0, 0] == 0.0 and back.flags.writeable
    back[0, 1] = 42.0  # nor with the numpy result
    assert backend.to_numpy(x)[0, 1] == 1.0


@pytest.mark.skipif(jax.config.jax_enable_x64, reason="JAX's 64-bit mode is on (JAX_ENABLE_X64)")
def test_32_bit_mode_narrows_float64_and_int64_as_jax_does(backend):
    assert backend.from_numpy(np.zeros(2)).dtype == jnp.float32
    assert backend.from_numpy(np.zeros(2, np.int64)).dtype == jnp.int32
    assert backend.randn(2).dtype == jnp.float32


def test_64_bit_mode_keeps_float64(backend):
    with jax.enable_x64(True):
        x = zerograd.Variable(backend.from_numpy(np.array([0.5, 1.5])))
        (F.tanh(x) * 2.0).sum().backward()
        assert x.grad.data.dtype == jnp.float64 and backend.randn(2).dtype == jnp.float64
        ref = 2 * (1 - np.tanh([0.5, 1.5]) ** 2)
        np.testing.assert_allclose(backend.to_numpy(x.grad.data), ref, rtol=1e-14)


def test_astype_and_dtype_kind(backend):
    x = backend.astype(backend.from_numpy(np.array([1.7, -2.2], np.float32)), jnp.int32)
    assert x.dtype == jnp.int32 and backend.to_numpy(x).tolist() == [1, -2]
    dtypes = [jnp.zeros(1, d).dtype for d in (jnp.bool_, jnp.int32, jnp.uint8, jnp.float32)]
    kinds = [backend.dtype_kind(d) for d in dtypes]
    assert kinds == ["b", "i", "u", "f"]


def test_scatter_add_adds_repeats_and_leaves_input(backend):
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([2, 0, 2, 2])
    values = np.ones((4, 3), np.float32) * np.arange(1, 5, dtype=np.float32)[:, None]
    a = backend.from_numpy(base)
    out = scatter_add(a, backend.from_numpy(idx), backend.from_numpy(values))
    expected = base.copy()
    np.add.at(expected, idx, values)
    np.testing.assert_array_equal(backend.to_numpy(out), expected)
    np.testing.assert_array_equal(backend.to_numpy(a), base)


@pytest.mark.parametrize(
    "index, message",
    [
        (5, "index 5 is out of bounds for axis 0 with size 3"),
        ((slice(None), -3), "index -3 is out of bounds for axis 1 with size 2"),
        ((Ellipsis, 2), "index 2 is out of bounds for axis 1 with size 2"),
        ((None, 1, [0, 2]), "index 2 is out of bounds for axis 1 with size 2"),
    ],
)
def test_out_of_range_index_raises_as_in_numpy(backend, index, message):
    # JAX alone clamps (x[5] would be the last row): a silently wrong value
    x = zerograd.Variable(backend.from_numpy(np.arange(6.0, dtype=np.float32).reshape(3, 2)))
    with pytest.raises(IndexError, match=rf"get_item: .*{message}"):
        F.get_item(x, index)
    with pytest.raises(IndexError, match=message):
        backend.scatter_add(x.data, index, 1.0)
    assert x.creator is None and x.grad is None


def test_in_range_indices_match_numpy(backend):
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = backend.from_numpy(a)
    mask = np.array([True, False, True])
    for index in [(-1, Ellipsis, -4), (None, 1, slice(None, None, -1)), (1, [0, 2, 2]), (0, mask)]:
        jidx = tuple(backend.from_numpy(i) if isinstance(i, np.ndarray) else i for i in index)
        np.testing.assert_array_equal(backend.to_numpy(backend.getitem(x, jidx)), a[index])


def test_a_list_index_gathers_rows_as_in_numpy(backend):
    # numpy reads a bare list as an integer-array index; JAX refuses it with a TypeError
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = zerograd.Variable(backend.from_numpy(a))
    y = x[[0, 2, 2]]
    assert backend_of(y.data) is backend
    np.testing.assert_array_equal(backend.to_numpy(y.data), a[[0, 2, 2]])
    F.sum(y).backward()
    np.testing.assert_array_equal(backend.to_numpy(x.grad.data), [[1.0] * 4, [0.0] * 4, [2.0] * 4])
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[[0, 3]]


def test_seeded_draws_repeat_and_each_call_gets_a_new_key(backend):
    backend.seed(3)
    first = [backend.to_numpy(backend.randn(2, 3)), backend.to_numpy(backend.rand(4))]
    backend.seed(3)
    again = [backend.to_numpy(backend.randn(2, 3)), backend.to_numpy(backend.rand(4))]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], backend.to_numpy(backend.randn(2, 3)))
    np.testing.assert_array_equal(
        first[0], jax.random.normal(jax.random.split(jax.random.key(3))[1], (2, 3))
    )


def test_draws_have_the_right_distribution(backend):
    backend.seed(0)
    n = backend.to_numpy(backend.randn(20000))
    u = backend.to_numpy(backend.rand(20000))
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    p = backend.to_numpy(backend.permutation(50))
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))


def test_variable_math_stays_on_the_backend(backend):
    x = zerograd.Variable(backend.from_numpy(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))
    y = F.sum(F.tanh(x @ x.T * 0.1) + 1)
    y.backward()
    assert backend_of(y.data) is backend and backend_of(x.grad.data) is backend
    assert x.grad.dtype == jnp.float32 and isinstance(y.item(), float)
    xn = np.array([[1.0, 2.0], [3.0, 4.0]])
    t = np.tanh(xn @ xn.T * 0.1)
    ref = (1 - t**2) * 0.1
    np.testing.assert_allclose(backend.to_numpy(x.grad.data), (ref + ref.T) @ xn, rtol=1e-5)


def test_a_bad_random_state_is_refused_in_the_plugins_words(backend):
    """The state's kind, and the refusals in the plugin's words (the conformance suite
    checks the round trip and a resume from a checkpoint)."""
    import re

    state = backend.random_state()
    assert isinstance(state, np.ndarray) and state.dtype == np.uint32
    now = backend.random_state()
    shape = now.shape
    for bad, got in [
        (now[:-1], f"shape {now[:-1].shape} of uint32"),
        (now.astype(np.float64), f"shape {shape} of float64"),
        (np.full(shape, 2**32), f"shape {shape} of int64"),
    ]:
        message = (
            f"zerograd-jax: a random state is jax.random.key_data's {shape} unsigned 32-bit "
            f"integers, got {got}"
        )
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            backend.set_random_state(bad)
        assert np.array_equal(backend.random_state(), now)
