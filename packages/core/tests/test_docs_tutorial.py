"""Claims of the tutorial's pages (docs/tutorial/*.md) that their code blocks do not show."""

import numpy as np
import pytest

from zerograd import Variable, as_array
from zerograd.backends import get_array_module


@pytest.mark.parametrize("data", [1.0, 3, True, [1.0, 2.0]], ids=["float", "int", "bool", "list"])
def test_a_python_number_is_refused_with_how_to_wrap_it(data):
    """variable.md: "a Python number is refused with a message that says how to wrap it"."""
    with pytest.raises(TypeError) as info:
        Variable(data)
    assert str(info.value) == (
        f"Variable(data): data must be an array of an installed backend, got builtins."
        f"{type(data).__name__}. Wrap Python scalars and lists first: Variable(np.array(1.0)) "
        f"or Variable(zerograd.as_array(1.0))."
    )
    assert Variable(as_array(data)).data.tolist() == data  # the way it says works


def test_the_array_module_of_numpy_data_is_numpy_or_its_array_api_namespace():
    """gpu.md: get_array_module gives numpy itself for numpy arrays on numpy 2, and on
    numpy 1.26 array-api-compat's numpy namespace, which holds numpy's names too (those the
    book's code calls on ``xp``). The page said ``numpy`` for both."""
    xp = get_array_module(np.ones(2))
    if int(np.__version__.split(".")[0]) >= 2:
        assert xp is np
    else:
        import array_api_compat.numpy

        assert xp is array_api_compat.numpy and xp is not np
    assert (xp.random, xp.add, xp.ndarray, xp.float32) == (
        np.random,
        np.add,
        np.ndarray,
        np.float32,
    )
    np.testing.assert_array_equal(xp.exp(np.zeros(2)), [1.0, 1.0])
