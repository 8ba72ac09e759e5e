"""What a Layer holds, as every walk over a model reads it: named_members, named_children
and the one tree walk that params, state dicts, weight files, repr and summary share."""

import copy

import numpy as np
import pytest

import zerograd_nn.layers as L
from zerograd import Parameter
from zerograd_nn.weights import named_params as file_names


def _p(n):
    return Parameter(np.full(n, float(n), dtype=np.float32))


class Block(L.Layer):
    def __init__(self):
        super().__init__()
        self.lin = L.Linear(2, in_size=2)
        self.gain = _p(1)

    def forward(self, x):
        return self.lin(x) * self.gain


class Net(L.Layer):
    def __init__(self):
        super().__init__()
        self.first = Block()
        self.blocks = [Block(), _p(3)]  # a list: its items are named by index
        self.scale = _p(2)
        self.again = self.first  # one sub-layer under two names

    def forward(self, x):
        return x


def test_named_members_come_in_definition_order_attributes_first():
    net = Net()
    names = [n for n, _ in net.named_members()]
    assert names == ["first", "scale", "again", "blocks.0", "blocks.1"]
    members = dict(net.named_members())
    assert members["again"] is members["first"] and isinstance(members["blocks.0"], Block)


def test_named_children_list_each_sub_layer_once_under_its_first_name():
    net = Net()
    assert [n for n, _ in net.named_children()] == ["first", "blocks.0"]
    assert list(net.first.named_children()) == [("lin", net.first.lin)]


def test_the_walk_yields_every_layer_and_parameter_with_name_label_and_depth():
    net = Net()
    got = [(name, label, depth, type(m).__name__) for name, label, depth, m in net.walk()]
    assert got == [
        ("", "", 0, "Net"),
        ("first", "first", 1, "Block"),
        ("first.lin", "lin", 2, "Linear"),
        ("first.lin.W", "W", 3, "Parameter"),
        ("first.lin.b", "b", 3, "Parameter"),
        ("first.gain", "gain", 2, "Parameter"),
        ("scale", "scale", 1, "Parameter"),
        ("blocks.0", "blocks.0", 1, "Block"),
        ("blocks.0.lin", "lin", 2, "Linear"),
        ("blocks.0.lin.W", "W", 3, "Parameter"),
        ("blocks.0.lin.b", "b", 3, "Parameter"),
        ("blocks.0.gain", "gain", 2, "Parameter"),
        ("blocks.1", "blocks.1", 1, "Parameter"),
    ]


def test_params_state_dict_and_weight_files_name_the_walks_parameters_once():
    net = Net()
    names = list(net.named_params())
    assert names == [
        "first.lin.W", "first.lin.b", "first.gain", "scale",
        "blocks.0.lin.W", "blocks.0.lin.b", "blocks.0.gain", "blocks.1",
    ]  # fmt: skip
    assert [id(p) for p in net.params()] == [id(p) for p in net.named_params().values()]
    assert list(net.state_dict()) == names
    assert list(file_names(net)) == [n.replace(".", "/") for n in names]
    flat = {}
    net._flatten_params(flat, "net")  # DeZero's spelling, with a parent key
    assert list(flat) == ["net/" + n.replace(".", "/") for n in names]


def test_summary_counts_a_layers_own_parameters_listed_ones_included():
    class Holder(L.Layer):
        def __init__(self):
            super().__init__()
            self.w = _p(2)
            self.extra = [_p(3), _p(4)]

        def forward(self, x):
            return x * self.w

    s = Holder().summary(np.ones(2, dtype=np.float32), verbose=False)
    assert s.rows[0]["params"] == 2 + 3 + 4 == s.total_params


def test_train_and_eval_reach_every_layer_of_the_walk():
    net = Net().eval()
    assert not any(m.training for *_, m in net.walk() if isinstance(m, L.Layer))
    net.train()
    assert all(m.training for *_, m in net.walk() if isinstance(m, L.Layer))


def test_params_follow_named_params_when_layers_and_parameters_are_shared_across_holders():
    net = Net()
    inner = net.blocks[0]
    net.first.twin = inner  # a layer held by two different holders, at two depths
    net.first.lin.tied = inner.gain  # a parameter held by two layers
    net.blocks.append(net.first.lin)  # a layer held in a list and as an attribute
    named = list(net.named_params().values())
    assert [id(p) for p in net.params()] == [id(p) for p in named]
    assert len({id(p) for p in named}) == len(named) == 8


def _ids(layer):
    return [id(p) for p in layer.params()]


def _walked_ids(layer):
    """What a full walk (named_params, never remembered) finds: the reference."""
    return [id(p) for p in layer.named_params().values()]


def test_params_asked_again_follow_every_change_of_the_tree():
    # params() remembers its last walk per model (an optimizer asks at every update); each
    # change below must show at the next ask, however it was made
    net = Net()
    before = _ids(net)
    assert _ids(net) == before == _walked_ids(net)
    changes = [
        lambda: setattr(net.first, "extra", _p(4)),  # a Parameter added deep in the tree
        lambda: net.blocks.append(_p(5)),  # a list grown in place
        lambda: net.blocks.__setitem__(0, Block()),  # a list item replaced in place
        lambda: net.blocks.pop(),  # shrunk in place
        lambda: setattr(net, "blocks", [Block()]),  # the list replaced
        lambda: net.blocks[0].__delattr__("gain"),  # a Parameter deleted from a list's layer
        lambda: setattr(net.first, "lin", L.Linear(2, in_size=2)),  # a sub-layer replaced
        lambda: setattr(net, "scale", None),  # a Parameter attribute set to something else
        lambda: net.later.append(_p(6)),  # a list set empty (below), filled in place
    ]
    for i, change in enumerate(changes):
        if i == len(changes) - 1:
            net.later = []
            assert _ids(net) == _walked_ids(net)  # remembered with the empty list
        seen = _ids(net)
        change()
        assert _ids(net) == _walked_ids(net)
        assert _ids(net) != seen


def test_params_of_a_layer_with_its_own_named_members_are_walked_every_time():
    class Dynamic(L.Layer):
        def __init__(self):
            super().__init__()
            self.table = {"a": _p(1)}  # members in a dict: no attribute assignment adds one

        def named_members(self):
            yield from super().named_members()
            yield from self.table.items()

    net = Net()
    net.dyn = Dynamic()
    first = _ids(net)
    net.dyn.table["b"] = _p(2)
    assert len(_ids(net)) == len(first) + 1 == len(_walked_ids(net))


def test_params_remembered_keep_no_model_alive_and_need_no_hash():
    import gc
    import weakref

    class ByValue(Net):
        def __eq__(self, other):  # equal by value and unhashable: a walk is kept by identity
            return isinstance(other, ByValue)

        __hash__ = None

    a, b = ByValue(), ByValue()
    assert _ids(a) != _ids(b)  # equal layers, each with its own parameters
    n = len(_ids(a))
    a.blocks.append(a)  # a cycle through a list attribute, walked once
    ref = weakref.ref(a)
    assert len(_ids(a)) == n
    del a
    gc.collect()
    assert ref() is None


def test_params_follow_a_list_item_replaced_by_a_copy_that_took_the_removed_ones_id():
    # a copy (copy.copy, copy.deepcopy, pickle) sets no attribute, so nothing but the list's
    # item ids tells the remembered walk of the change; CPython gives the copy the memory,
    # and so the id, of the layer just removed, and params() gave the removed layer's
    # Parameters: an optimizer trained those and never the new one
    template = Block()
    for how in (copy.copy, copy.deepcopy):
        for _ in range(20):
            net = Net()
            _ids(net)  # remembered
            gone = id(net.blocks[0])
            del net.blocks[0]
            net.blocks.insert(0, how(template))
            if id(net.blocks[0]) == gone:
                break
        else:
            pytest.skip(f"this Python gave no {how.__name__} the removed layer's id")
        assert _ids(net) == _walked_ids(net)
        assert any(p is net.blocks[0].lin.W for p in net.params())


def test_a_dropped_model_s_parameters_go_without_the_cyclic_collector():
    """params() walks nested layers and lists, in the full walk's order, and leaves no
    reference cycle behind: a model the user drops frees its Parameters (their data and
    gradients) at once, not at the next collection of the cyclic collector."""
    import gc
    import weakref

    was = gc.isenabled()
    gc.disable()
    try:
        net = Net()
        assert _ids(net) == _walked_ids(net)  # nested layers, a list, a shared member
        refs = [weakref.ref(p) for p in net.params()]
        del net
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        if was:
            gc.enable()
