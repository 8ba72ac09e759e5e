"""The PyTorch backend seen through zerograd: found, converting, scattering, writing, drawing."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from zerograd_torch import TorchBackend

import zerograd
from zerograd.backends import get_array_module, list_backends


def test_found_through_the_entry_point_with_its_version(backend):
    assert isinstance(backend, TorchBackend)
    row = next(r for r in list_backends() if r.name == "torch")
    assert (row.plugin, row.distribution, row.device, row.available) == (
        "torch",
        "zerograd-torch",
        "cpu",
        True,
    )
    assert row.version == torch.__version__


def test_owns_tensors_and_their_subclasses_only(backend):
    assert backend.owns(torch.Tensor) and backend.owns(torch.nn.Parameter)
    for other in (np.ndarray, np.float32, list, float, zerograd.Variable):
        assert not backend.owns(other)
    assert not backend.owns(type("Tensor", (), {"__module__": "torchish"}))


def test_loading_the_plugin_does_not_import_torch():
    code = (
        "import sys, numpy as np\n"
        "from zerograd.backends import get_backend\n"
        "b = get_backend('torch')\n"
        "assert not b.owns(np.ndarray)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_array_module_is_array_api_compat_torch(backend):
    import array_api_compat.torch

    x = zerograd.Variable(backend.from_numpy(np.ones(2, np.float32)))
    assert get_array_module(x) is array_api_compat.torch


def test_numpy_round_trips_copy(backend):
    a = np.arange(6.0).reshape(2, 3)[:, ::-1]  # not contiguous: copied into a tensor anyway
    t = backend.from_numpy(a)
    a[0, 0] = 99.0
    assert t.dtype == torch.float64 and t[0, 0].item() == 2.0  # no shared memory
    back = backend.to_numpy(t)
    back[0, 0] = -1.0
    assert t[0, 0].item() == 2.0


@pytest.mark.parametrize(
    "shape, index",
    [
        ((5,), np.array([0, 4, 4, -1, 2])),  # repeats; -1 is 4 again
        ((4, 3), np.array([[1, 1], [3, 0]])),  # a 2-D index of rows
        ((3, 4), (np.array([0, 2, 2]), np.array([1, 3, 3]))),  # repeated pairs
        ((2, 3), np.array([[True, False, True], [False, False, True]])),  # a mask
        ((4, 3), (slice(1, 3), np.array([2, 2]))),  # a slice: the default's path
    ],
)
def test_scatter_add_is_numpys_add_at_on_a_copy(backend, shape, index):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape)
    values = rng.standard_normal(a[index].shape)
    expected = a.copy()
    np.add.at(expected, index, values)
    t = backend.from_numpy(a)
    got = backend.scatter_add(t, index, backend.from_numpy(values))
    np.testing.assert_allclose(backend.to_numpy(got), expected, rtol=1e-12)
    np.testing.assert_array_equal(backend.to_numpy(t), a)  # the input is left as it was


@pytest.mark.parametrize(
    "index",
    [
        slice(None, None, -1),
        (Ellipsis, slice(3, 0, -2)),
        (0, slice(None, None, -1), None, slice(1, 3)),
        (slice(5, -10, -1), 1),  # out-of-range bounds are clipped, as numpy does
        (slice(1, 1, -1),),  # empty
    ],
)
def test_getitem_takes_negative_steps_as_numpy(backend, index):
    a = np.arange(24.0).reshape(2, 3, 4)
    got = backend.getitem(backend.from_numpy(a), index)  # torch's own x[::-1] refuses them
    np.testing.assert_array_equal(backend.to_numpy(got), a[index])
    x = zerograd.Variable(backend.from_numpy(a))
    zerograd.functions.get_item(x, index).backward()
    expected = np.zeros_like(a)
    np.add.at(expected, index, 1.0)
    np.testing.assert_array_equal(backend.to_numpy(x.grad.data), expected)


def test_scatter_add_out_of_range_is_an_index_error(backend):
    with pytest.raises(IndexError, match="out of bounds"):
        backend.scatter_add(backend.from_numpy(np.zeros(3)), np.array([0, 3]), 1.0)


def test_tensors_are_written_in_place_with_out(backend):
    x = backend.from_numpy(np.array([1.0, 4.0, 9.0], np.float32))
    assert backend.writable(x) is True
    out = torch.empty_like(x)
    backend.compute_into("multiply", x, 0.5, out=out)
    assert out.dtype == torch.float32 and out.tolist() == [0.5, 2.0, 4.5]
    backend.compute_into("sqrt", x, out=x)
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_seed_repeats_the_draws_and_zerograd_seed_reaches_it(backend):
    def draws():
        return [backend.randn(2, 3), backend.rand(4, dtype="float64"), backend.permutation(6)]

    backend.seed(3)
    first = draws()
    zerograd.seed(3)
    for a, b in zip(draws(), first):
        assert torch.equal(a, b)
    assert [a.dtype for a in first] == [torch.float32, torch.float64, torch.int64]
    assert sorted(first[2].tolist()) == list(range(6))


def test_a_bad_random_state_is_refused_in_the_plugins_words(backend):
    """The state's kind, and the refusals in the plugin's words (the conformance suite
    checks the round trip and a resume from a checkpoint)."""
    state = backend.random_state()
    assert isinstance(state, np.ndarray) and state.ndim == 1 and state.dtype == np.uint8
    now = backend.random_state()
    n = now.size
    for bad, shape, dtype in [
        (now[:-1], (n - 1,), "uint8"),
        (now.astype(np.float64), (n,), "float64"),
        (np.full(n, 256), (n,), "int64"),
    ]:
        message = (
            f"zerograd-torch: a random state is torch.get_rng_state()'s {n} bytes, got shape "
            f"{shape} of {dtype}"
        )
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            backend.set_random_state(bad)
        assert np.array_equal(backend.random_state(), now)
