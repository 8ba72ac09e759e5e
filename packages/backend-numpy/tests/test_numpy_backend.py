"""numpy-specific behaviour of the backend plugin."""

import numpy as np
import pytest

from zerograd import Variable
from zerograd.backends import get_backend
from zerograd_numpy import NumpyBackend, kernels


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


@pytest.mark.parametrize(
    ("shape", "widths", "value"),
    [
        ((2, 3, 5, 4), ((0, 0), (0, 0), (1, 1), (2, 0)), float("-inf")),
        ((3,), ((0, 2),), 7.0),
        ((0, 3), ((1, 1), (0, 1)), 0.0),
        ((2, 2), ((0, 0), (0, 0)), 1.0),
    ],
)
def test_pad_equals_numpy_pad(shape, widths, value):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    got = kernels.pad(x, widths, value)
    want = np.pad(x, widths, mode="constant", constant_values=value)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(got, x)


@pytest.mark.parametrize(
    ("img_shape", "k", "s", "p", "tiled"),
    [
        ((2, 3, 6, 4), (2, 2), (2, 2), (0, 0), True),
        ((1, 2, 6, 6), (3, 2), (3, 2), (0, 0), True),
        ((2, 1, 5, 4), (2, 2), (2, 2), (0, 0), False),  # a row left over
        ((1, 2, 5, 5), (3, 3), (1, 1), (1, 1), False),  # overlapping, padded
        ((1, 1, 7, 6), (2, 2), (3, 3), (0, 0), False),  # gaps between windows
    ],
)
def test_col2im_adds_each_patch_back_where_it_came_from(img_shape, k, s, p, tiled):
    """Against a loop; where the windows tile the image the result is one contiguous array
    (what reads it next, the gradient of pooling's input, runs faster on it)."""
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    n, c, h, w = img_shape
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    col = np.random.default_rng(0).standard_normal((n, c, kh, kw, oh, ow))
    padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    for j, i, y, x in np.ndindex(kh, kw, oh, ow):
        padded[:, :, j + sh * y, i + sw * x] += col[:, :, j, i, y, x]
    got = kernels.col2im(col, img_shape, k, s, p)
    np.testing.assert_allclose(got, padded[:, :, ph : ph + h, pw : pw + w], rtol=1e-14)
    assert got.shape == img_shape
    if tiled:
        assert got.flags.c_contiguous


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_numpy_matrix_is_refused_not_multiplied_as_matrices():
    # numpy.matrix's * is a matrix product: Mul's forward computed m @ m, and its derivative
    # (gy * x1, elementwise) the gradient of something else, with no error
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    said = (
        r"numpy\.matrix is not supported: its \* and \*\* are matrix products.*numpy\.asarray\(m\)"
    )
    with pytest.raises(TypeError, match=r"^Variable\(data\): " + said):
        Variable(m)
    x = Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))
    with pytest.raises(TypeError, match=r"^Mul: input 1: " + said):
        x * m
    with pytest.raises(TypeError, match=r"^Mul: input 1: " + said):
        m * x
    assert x.creator is None and x.grad is None
    np.testing.assert_array_equal(m, [[1.0, 2.0], [3.0, 4.0]])
    y = Variable(np.asarray(m)) * x  # the conversion the message names: elementwise
    y.sum().backward()
    np.testing.assert_array_equal(y.data, [[1.0, 4.0], [9.0, 16.0]])
    np.testing.assert_array_equal(x.grad.data, [[1.0, 2.0], [3.0, 4.0]])


def test_a_masked_array_is_refused_not_computed_around_its_mask():
    # softmax of a masked row normalized with the masked entry's value: its outputs summed
    # to 0.13, not 1
    a = np.ma.masked_array([[1.0, 2.0, 3.0]], mask=[[0, 1, 0]])
    said = r"numpy\.ma\.MaskedArray is not supported: .*a\.filled\(value\)"
    with pytest.raises(TypeError, match=r"^Variable\(data\): " + said):
        Variable(a)
    x = Variable(np.ones((1, 3)))
    with pytest.raises(TypeError, match=r"^Mul: input 1: " + said):
        x * a
    assert x.creator is None and x.grad is None
    assert a.mask.tolist() == [[False, True, False]]


def test_other_ndarray_subclasses_stay_accepted():
    class Tagged(np.ndarray):
        pass

    x = Variable(np.array([1.0, 2.0]).view(Tagged))
    y = x * x
    y.sum().backward()
    np.testing.assert_array_equal(y.data, [1.0, 4.0])
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])
