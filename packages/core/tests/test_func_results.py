"""What the transforms give back: arrays for arrays, Variables where an outside graph reaches.

Values against hand-computed results, float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import modes
from zerograd.func import grad, vmap


@pytest.fixture(autouse=True)
def _no_mode_left_behind():
    yield
    assert modes.switch.on == 0 and modes.current() is None, "a transform left a mode entered"


XS = np.linspace(-1.0, 1.0, 12).reshape(4, 3)


def test_vmap_of_arrays_with_out_axes_gives_an_array():
    out = vmap(lambda x: x * 2.0, out_axes=1)(XS)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, 2 * XS.T)
    out = vmap(lambda x: grad(lambda v: F.sum(v * v))(x), out_axes=1)(XS)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, 2 * XS.T)


def test_a_vmap_of_arrays_inside_a_vmap_reads_the_outer_batch():
    xs, ys = np.array([1.0, 2.0]), np.array([0.0, 1.0, 2.0])
    out = vmap(lambda a: vmap(lambda b: a * b)(ys))(xs)
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, np.outer(xs, ys))
    out = vmap(lambda a: vmap(lambda b: a)(ys))(xs)  # a does not depend on the inner batch
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, np.repeat(xs[:, None], 3, axis=1))
