"""get_dot_graph: exact DOT text for small graphs, order, escaping, create_graph, 10k nodes."""

import pytest

import zerograd.functions as F
from zerograd import Function, Variable
from zerograd_viz import get_dot_graph
from zerograd_viz.dot import functions_in_order, quote


def var(n, label):
    return f'{n} [label="{label}", color=orange, style=filled]'


def fn(n, label):
    return f'{n} [label="{label}", color=lightblue, style=filled, shape=box]'


def dot(*lines):
    return "\n".join(["digraph g {", *lines, "}"])


class Square(Function):
    """x ** 2 whose backward is one TwiceProduct node (a graph independent of core's ops)."""

    def forward(self, x):
        return x * x

    def backward(self, gy):
        (x,) = self.inputs
        return TwiceProduct()(x, gy)


class TwiceProduct(Function):
    def forward(self, x, gy):
        return 2 * x * gy

    def backward(self, g):
        x, gy = self.inputs
        return TwiceProduct()(gy, g), TwiceProduct()(x, g)


class Split(Function):
    """Two outputs: x and 2x."""

    def forward(self, x):
        return x * 1, x * 2

    def backward(self, g1, g2):
        return g1 + 2 * g2


def test_small_graph_verbose_exact(arr):
    x = Variable(arr([[1, 2, 3], [4, 5, 6]], "float32"), name="x")
    w = Variable(arr([[1, 1, 1], [2, 2, 2]], "float32"), name="w")
    y = x * w + x
    y.name = "y"
    assert get_dot_graph(y) == dot(
        var(0, "x: (2, 3) float32"),
        var(1, "w: (2, 3) float32"),
        fn(2, "Mul"),
        "0 -> 2",
        "1 -> 2",
        var(3, "(2, 3) float32"),
        "2 -> 3",
        fn(4, "Add"),
        "3 -> 4",
        "0 -> 4",
        var(5, "y: (2, 3) float32"),
        "4 -> 5",
    )


def test_small_graph_not_verbose_exact(arr):
    x = Variable(arr(2.0), name="x")
    y = x * x
    assert get_dot_graph(y, verbose=False) == dot(
        var(0, "x"), fn(1, "Mul"), "0 -> 1", "0 -> 1", var(2, ""), "1 -> 2"
    )
    # the default is verbose, as in DeZero
    assert get_dot_graph(y) == get_dot_graph(y, verbose=True)
    assert 'label="x: () float64"' in get_dot_graph(y)


def test_nodes_and_edges_follow_the_computation_order(arr):
    x = Variable(arr(0.5), name="x")
    a = F.sin(x)  # computed first
    b = F.sin(a)
    c = F.cos(x)  # higher up in the code than the Add, lower generation than b
    d = b + c
    d.name = "d"
    assert get_dot_graph(d, verbose=False) == dot(
        var(0, "x"),
        fn(1, "Sin"),
        "0 -> 1",
        var(2, ""),
        "1 -> 2",
        fn(3, "Sin"),
        "2 -> 3",
        var(4, ""),
        "3 -> 4",
        fn(5, "Cos"),
        "0 -> 5",
        var(6, ""),
        "5 -> 6",
        fn(7, "Add"),
        "4 -> 7",
        "6 -> 7",
        var(8, "d"),
        "7 -> 8",
    )
    assert [type(f).__name__ for f in functions_in_order(d)] == ["Sin", "Sin", "Cos", "Add"]


def test_a_variable_without_creator_is_one_node(arr):
    x = Variable(arr([1.0, 2.0]), name="x")
    assert get_dot_graph(x) == dot(var(0, "x: (2,) float64"))
    assert get_dot_graph(Variable(arr(1.0)), verbose=False) == dot(var(0, ""))
    assert get_dot_graph(Variable(None, name="empty")) == dot(var(0, "empty"))


def test_same_graph_same_text_and_no_object_ids(arr):
    def build():
        x = Variable(arr([1.0, 2.0]), name="x")
        return F.sum(F.exp(x) * x)

    a, b = get_dot_graph(build()), get_dot_graph(build())
    assert a == b
    y = build()
    assert get_dot_graph(y) == get_dot_graph(y)
    assert str(id(y)) not in get_dot_graph(y)


def test_gradient_graph_from_create_graph(arr):
    x = Variable(arr(3.0), name="x")
    y = Square()(x)
    y.backward(create_graph=True)
    gx = x.grad
    gx.name = "gx"
    assert float(gx.data) == 6.0
    # gx = TwiceProduct(x, gy) with gy the ones that backward started from
    assert get_dot_graph(gx) == dot(
        var(0, "x: () float64"),
        var(1, "() float64"),
        fn(2, "TwiceProduct"),
        "0 -> 2",
        "1 -> 2",
        var(3, "gx: () float64"),
        "2 -> 3",
    )
    x.cleargrad()
    gx.backward(create_graph=True)  # second order: d(2x)/dx = 2
    assert float(x.grad.data) == 2.0
    text = get_dot_graph(x.grad, verbose=False)
    assert text.count('label="TwiceProduct"') == 1
    assert text.count("->") == 3


def test_gradient_graph_of_core_ops_includes_forward_variables(arr):
    x = Variable(arr(2.0), name="x")
    y = F.sin(x) * x
    y.backward(create_graph=True)
    text = get_dot_graph(x.grad, verbose=False)
    assert text.count('label="x"') == 1  # one node per variable, however often it is used
    nodes = check_well_formed(text)
    assert nodes[0] == var(0, "x")
    assert 'label="Mul"' in text  # the backward of the forward Mul is in the gradient's graph


def check_well_formed(text):
    """Node ids count up from 0 and each edge joins nodes declared before it; the nodes."""
    lines = text.splitlines()
    assert lines[0] == "digraph g {" and lines[-1] == "}"
    nodes = []
    for line in lines[1:-1]:
        if " -> " in line:
            a, b = (int(s) for s in line.split(" -> "))
            assert a < len(nodes) and b < len(nodes), line
        else:
            assert line.startswith(f"{len(nodes)} [label="), line
            nodes.append(line)
    return nodes


def test_multi_output_function_draws_live_outputs_only(arr):
    x = Variable(arr(1.0), name="x")
    a, b = Split()(x)
    a.name, b.name = "a", "b"
    y = Square()(a)
    y.name = "y"
    both = dot(
        var(0, "x"),
        fn(1, "Split"),
        "0 -> 1",
        var(2, "a"),
        "1 -> 2",
        var(3, "b"),
        "1 -> 3",
        fn(4, "Square"),
        "2 -> 4",
        var(5, "y"),
        "4 -> 5",
    )
    assert get_dot_graph(y, verbose=False) == both
    del b  # the second output is freed: nothing to draw for it
    assert get_dot_graph(y, verbose=False) == dot(
        var(0, "x"),
        fn(1, "Split"),
        "0 -> 1",
        var(2, "a"),
        "1 -> 2",
        fn(3, "Square"),
        "2 -> 3",
        var(4, "y"),
        "3 -> 4",
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ('say "hi"', r'"say \"hi\""'),
        ("back\\slash", r'"back\\slash"'),
        ("ends with \\", r'"ends with \\"'),
        ("two\nlines", r'"two\nlines"'),
        ("cr\r\nlf\rx", r'"cr\nlf\nx"'),
        ("\\n is not a newline", r'"\\n is not a newline"'),
        ("ünïcode → ok", '"ünïcode → ok"'),
        ("nul\x00byte", r'"nul\\x00byte"'),
        ("esc\x1b[0m del\x7f c1\x85 tab\tkept", '"esc\\\\x1b[0m del\\\\x7f c1\\\\x85 tab\tkept"'),
        ("lone \ud800 surrogate", r'"lone \\ud800 surrogate"'),
    ],
)
def test_labels_are_escaped(arr, name, expected):
    assert quote(name) == expected
    x = Variable(arr(1.0), name=name)
    assert get_dot_graph(x, verbose=False) == dot(
        f"0 [label={expected}, color=orange, style=filled]"
    )


def test_function_labels_are_escaped_too(arr):
    Odd = type('Odd"Name', (Square,), {})
    text = get_dot_graph(Odd()(Variable(arr(1.0))), verbose=False)
    assert '1 [label="Odd\\"Name", color=lightblue' in text


def test_ten_thousand_nodes_without_recursion(arr):
    # a chain 5,000 functions deep: a recursive walk would exceed Python's recursion limit
    x = Variable(arr(0.1), name="x")
    y = x
    for _ in range(5000):
        y = F.sin(y)
    y.name = "y"
    lines = get_dot_graph(y).splitlines()
    nodes = [line for line in lines if "[label=" in line]
    edges = [line for line in lines if " -> " in line]
    assert len(nodes) == 10001 and len(edges) == 10000
    assert lines[1] == var(0, "x: () float64")
    assert lines[-3] == var(10000, "y: () float64") and lines[-2] == "9999 -> 10000"
    assert sum(1 for n in nodes if 'label="Sin"' in n) == 5000
    assert len(check_well_formed("\n".join(lines))) == 10001


def test_not_a_variable_is_a_clear_error(arr):
    with pytest.raises(TypeError, match=r"get_dot_graph\(output\): output must be a zerograd "):
        get_dot_graph(arr([1.0]))


def test_numpy_bools_are_taken_for_verbose(arr):
    # numpy 2 names its bool scalar type "bool", not "bool_": the check refused np.False_
    # ("verbose must be True or False, got bool (np.False_)")
    np = pytest.importorskip("numpy")
    y = Variable(arr([1.0, 2.0]), name="x") * 2.0
    assert get_dot_graph(y, verbose=np.False_) == get_dot_graph(y, verbose=False)
    assert get_dot_graph(y, verbose=np.bool_(True)) == get_dot_graph(y, verbose=True)
    assert get_dot_graph(y, verbose=np.array(2.0) > 1) == get_dot_graph(y, verbose=True)
    for wrong in ("no", 1, None, np.int64(0), np.array([True])):
        with pytest.raises(TypeError, match=r"get_dot_graph: verbose must be True or False"):
            get_dot_graph(y, verbose=wrong)


def test_an_unchained_then_dropped_variable_draws_as_a_dropped_one(arr):
    """Its shape and dtype, one node however many uses (it drew as an empty label, once
    per use): as a dropped variable still linked to its creator draws, minus the creator."""

    def graph(unchain):
        x = Variable(arr([[1, 1, 1], [1, 1, 1]], "float32"), name="x")
        h = F.sin(x)
        z = F.exp(h) + h  # exp and add keep only the way back to sin
        if unchain:
            h.unchain()
        del h
        return get_dot_graph(z)

    assert graph(unchain=True).splitlines() == [
        "digraph g {",
        '0 [label="(2, 3) float32", color=orange, style=filled]',
        '1 [label="Exp", color=lightblue, style=filled, shape=box]',
        "0 -> 1",
        '2 [label="(2, 3) float32", color=orange, style=filled]',
        "1 -> 2",
        '3 [label="Add", color=lightblue, style=filled, shape=box]',
        "2 -> 3",
        "0 -> 3",
        '4 [label="(2, 3) float32", color=orange, style=filled]',
        "3 -> 4",
        "}",
    ]
    kept = graph(unchain=False)
    assert '2 [label="(2, 3) float32", color=orange, style=filled]' in kept  # h, dropped
    assert kept.count("-> 3\n") == 1 and kept.count("2 -> ") == 2  # one node for its uses


def test_one_array_operand_used_twice_is_one_constant_node(arr):
    x, c = Variable(arr([1.0, 2.0]), name="x"), arr([3.0, 4.0])
    text = get_dot_graph((x * c) + c, verbose=False)
    assert text.count("color=orange") == 4  # x, c (once), x * c and the sum
    other = get_dot_graph((x * c) + arr([3.0, 4.0]), verbose=False)
    assert other.count("color=orange") == 5  # an equal array of its own: its own node
