"""Claims of the tutorial's pages (docs/tutorial/*.md) that their code blocks do not show."""

import pytest

from zerograd import Variable, as_array


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
