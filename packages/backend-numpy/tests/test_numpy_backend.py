"""numpy-specific behaviour of the backend plugin."""

import numpy as np

from zerograd import Variable
from zerograd.backends import get_backend
from zerograd_numpy import NumpyBackend


def test_numpy_scalars_are_accepted_as_zero_d_arrays():
    x = Variable(np.float64(2.0))
    y = x * x
    y.backward()
    assert float(x.grad.data) == 4.0


def test_scatter_add_basic_index_fast_path_matches_add_at():
    b = NumpyBackend()
    a = np.zeros((3, 4))
    v = np.arange(8.0).reshape(2, 4)
    out = b.scatter_add(a, (slice(0, 2),), v)
    ref = a.copy()
    np.add.at(ref, (slice(0, 2),), v)
    np.testing.assert_array_equal(out, ref)
    assert not a.any()


def test_registered_through_the_entry_point():
    backend = get_backend("numpy")
    assert isinstance(backend, NumpyBackend)
    assert backend.version() == np.__version__


def test_numpy_scalars_are_not_claimed_as_arrays():
    # np.float64 is what 0-d arithmetic returns; zerograd turns it into a 0-d array instead
    b = get_backend("numpy")
    assert b.owns(np.ndarray) and not b.owns(np.float64) and not b.owns(np.bool_)
