"""Models far wider and deeper than the other tests': each surface stays linear.

Costs are asserted as operation counts, never as wall time.
"""

import copy
import pickle

import numpy as np

from zerograd import Parameter
from zerograd_nn import Layer


class _Name(str):
    """An attribute name that counts the comparisons made with it."""

    compared = 0
    __hash__ = str.__hash__

    def __eq__(self, other):
        _Name.compared += 1
        return str.__eq__(self, other)


def test_a_layer_with_thousands_of_parameters_finds_each_name_in_one_step():
    # each assignment looked its name up in a list of the names before it: n**2 / 2
    # comparisons for n Parameters (seconds for 20,000)
    n = 2000
    layer = Layer()
    _Name.compared = 0
    for i in range(n):
        setattr(layer, _Name(f"p{i}"), Parameter(np.full(1, float(i))))
    setattr(layer, _Name("p7"), Parameter(np.full(1, -7.0)))  # a replaced member
    setattr(layer, _Name("p8"), 8.0)  # a member that became a plain attribute
    assert _Name.compared < n
    names = [name for name, _ in layer.named_members()]
    assert names == [f"p{i}" for i in range(n) if i != 8]
    assert float(layer.p7.data[0]) == -7.0 and layer.p8 == 8.0
    del layer.p9
    assert len(list(layer.params())) == n - 2
    for twin in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer)), copy.copy(layer)):
        assert [name for name, _ in twin.named_members()] == [x for x in names if x != "p9"]
        twin.extra = Parameter(np.zeros(1))  # a copy's names are its own
        assert len(list(twin.params())) == n - 1
    assert len(list(layer.params())) == n - 2


def test_a_layer_pickled_with_lists_of_member_names_loads():
    # layers pickled while the member names were kept in lists
    layer = Layer()
    layer.W = Parameter(np.ones(2))
    layer.blocks = [Parameter(np.zeros(1))]
    state = layer.__getstate__()
    state["_params"], state["_lists"] = ["W"], ["blocks"]
    old = Layer.__new__(Layer)
    old.__setstate__(state)
    old.b = Parameter(np.zeros(3))
    del old.W
    assert [name for name, _ in old.named_members()] == ["b", "blocks.0"]
