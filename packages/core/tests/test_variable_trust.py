"""The Variable API as PyTorch and DeZero users use it: no silent sharing, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from zerograd import Variable


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("seed_kind", ["variable", "array"])
def test_a_preset_seed_is_not_handed_on_as_a_leaf_gradient(create_graph, seed_kind):
    # add passes its output gradient through unchanged: the leaf must get its own copy,
    # not the user's seed (which y no longer holds once backward cleared it)
    x = Variable(np.array([1.0, 2.0]))
    y = x + 1.0
    seed = np.array([3.0, 5.0])
    g = Variable(seed) if seed_kind == "variable" else seed
    y.grad = g
    y.backward(create_graph=create_graph)
    assert x.grad is not g
    np.testing.assert_array_equal(x.grad.data, [3.0, 5.0])
    x.grad.data += 10.0  # the user's in-place edit of one gradient
    np.testing.assert_array_equal(seed, [3.0, 5.0])


def test_a_preset_seed_stays_y_s_own_under_retain_grad():
    x = Variable(np.array([1.0, 2.0]))
    y = x + 1.0
    g = Variable(np.array([3.0, 5.0]))
    y.grad = g
    y.backward(retain_grad=True)
    assert y.grad is g
    x.grad.data += 10.0
    np.testing.assert_array_equal(g.data, [3.0, 5.0])


def test_backward_of_a_variable_without_data_says_so():
    x = Variable(None)
    with pytest.raises(TypeError, match=r"backward\(\) of a Variable whose data is None"):
        x.backward()
    assert x.grad is None


@pytest.mark.parametrize("prop", ["shape", "ndim", "size", "dtype"])
def test_array_properties_of_a_variable_without_data_say_so(prop):
    x = Variable(None)
    with pytest.raises(AttributeError, match=rf"x\.{prop} of a Variable whose data is None"):
        getattr(x, prop)
    assert not hasattr(x, prop)  # still an AttributeError: getattr(x, prop, default) works


def test_len_of_a_variable_without_data_says_so():
    with pytest.raises(TypeError, match=r"len\(\) of a Variable whose data is None"):
        len(Variable(None))
