"""Every function in the op table, exported alone (or with what feeds it) and run in ONNX
Runtime at two batch sizes: within rtol = atol = 1e-5 of zerograd's forward, through a
file that passes onnx's full checker."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import forward, op_types, round_trip

import zerograd.functions as ZF
import zerograd_nn.functional as F
import zerograd_onnx
from zerograd import Parameter, Variable
from zerograd_onnx.capture import capture
from zerograd_onnx.registry import CONVERTERS

_rng = np.random.default_rng(1)


def _param(*shape, name):
    return Parameter(_rng.standard_normal(shape).astype(np.float32), name=name)


W = _param(5, 4, name="W")
B = _param(4, name="b")
K = _param(3, 2, 3, 3, name="K")  # conv: (OC, C, KH, KW)
KB = _param(3, name="kb")
DK = _param(2, 3, 3, 3, name="DK")  # deconv: (C, OC, KH, KW)
BN_MEAN, BN_GAMMA, BN_BETA = _param(4, name="mean"), _param(4, name="gamma"), _param(4, name="beta")
BN_VAR = Parameter(_rng.uniform(0.5, 1.5, 4).astype(np.float32), name="var")

ROW = (4,)  # the shape of one row of most cases' input
IMAGE = (2, 6, 6)  # one image: 2 channels of 6x6

# name -> (the Function class it covers, the function of x, the shape of one row of x)
CASES = {
    "add": (ZF.Add, lambda x: x + B, ROW),
    "add_broadcast_rows": (ZF.Add, lambda x: x + x[:1], ROW),
    "sub_reflected": (ZF.Sub, lambda x: 2.0 - x, ROW),
    "mul": (ZF.Mul, lambda x: x * x, ROW),
    "div": (ZF.Div, lambda x: x / (B * B + 1.0), ROW),
    "neg": (ZF.Neg, lambda x: -x, ROW),
    "pow": (ZF.Pow, lambda x: x**3, ROW),
    "pow_variable": (ZF.PowVar, lambda x: (x * x + 1.0) ** B, ROW),
    "square": (ZF.Square, F.square, ROW),
    "exp": (ZF.Exp, F.exp, ROW),
    "log": (ZF.Log, lambda x: F.log(x * x + 1.0), ROW),
    "sin": (ZF.Sin, F.sin, ROW),
    "cos": (ZF.Cos, F.cos, ROW),
    "tanh": (ZF.Tanh, F.tanh, ROW),
    "sqrt": (ZF.Sqrt, lambda x: F.sqrt(x * x), ROW),
    "clip": (ZF.Clip, lambda x: F.clip(x, -0.5, 0.5), ROW),
    "clip_lower_only": (ZF.Clip, lambda x: F.clip(x, -0.5, None), ROW),
    "clip_array_bounds": (
        ZF.Clip,
        lambda x: F.clip(x, np.full(4, -0.3, np.float32), np.full(4, 0.2, np.float32)),
        ROW,
    ),
    "as_float": (F.arrays.AsFloat, lambda x: F.dropout(x) * 0.5, None),  # integer input
    "sigmoid_of_integers": (F.Sigmoid, F.sigmoid, None),
    "reshape_keeping_batch": (ZF.Reshape, lambda x: F.reshape(x, (x.shape[0], 2, 2)), ROW),
    "reshape_batch_folded": (ZF.Reshape, lambda x: F.reshape(x, (-1, 2)), ROW),
    "flatten": (ZF.Reshape, F.flatten, (2, 2)),
    "expand_dims": (ZF.Reshape, lambda x: F.expand_dims(x, 1), ROW),
    "transpose": (ZF.Transpose, lambda x: F.transpose(x, (0, 2, 1)), (2, 4)),
    "transpose_reversed": (ZF.Transpose, lambda x: x.T, ROW),
    "get_item_int": (ZF.GetItem, lambda x: x[:, 1], ROW),
    "get_item_mixed": (ZF.GetItem, lambda x: x[:, None, ::2, -1], (4, 5)),
    "get_item_ellipsis": (ZF.GetItem, lambda x: x[..., 1:3], (4, 5)),
    "get_item_reversed": (ZF.GetItem, lambda x: x[:, ::-1], ROW),
    "get_item_array": (ZF.GetItem, lambda x: x[:, np.array([0, 2, 2])], ROW),
    "get_item_mask": (ZF.GetItem, lambda x: x[:, np.array([True, False, True, True])], ROW),
    "get_item_batch_row": (ZF.GetItem, lambda x: x[-1] + x[1:].sum(axis=0), ROW),
    "broadcast_to": (
        ZF.BroadcastTo,
        lambda x: F.broadcast_to(F.sum(x, axis=1, keepdims=True), x.shape),
        ROW,
    ),
    "broadcast_to_constant_rows": (ZF.BroadcastTo, lambda x: x + F.broadcast_to(B, (2, 4)), (2, 4)),
    "sum_to": (ZF.SumTo, lambda x: F.sum_to(x, (1, 4)), ROW),
    "sum_to_leading": (ZF.SumTo, lambda x: F.sum_to(x, (4,)), (3, 4)),
    "concatenate": (ZF.Concatenate, lambda x: F.concatenate([x, x * 2.0], axis=-1), ROW),
    "stack": (ZF.Stack, lambda x: F.stack([x, x * 2.0], axis=1), ROW),
    "sum": (ZF.Sum, lambda x: F.sum(x, axis=1), ROW),
    "sum_keepdims": (ZF.Sum, lambda x: F.sum(x, axis=(1, 2), keepdims=True), (2, 4)),
    "mean_over_features": (ZF.Sum, lambda x: F.mean(x, axis=1), ROW),
    "max": (ZF.Max, lambda x: F.max(x, axis=1, keepdims=True), ROW),
    "min": (ZF.Min, lambda x: F.min(x, axis=(1, 2)), (4, 2)),
    "matmul": (ZF.MatMul, lambda x: F.matmul(x, W), (5,)),
    "matmul_batched": (ZF.MatMul, lambda x: x @ W, (2, 5)),
    "linear": (F.Linear, lambda x: F.linear(x, W, B), (5,)),
    "linear_without_bias": (F.Linear, lambda x: F.linear(x, W), (5,)),
    "linear_3d": (F.Linear, lambda x: F.linear(x, W, B), (2, 5)),
    "linear_simple": (ZF.MatMul, lambda x: F.linear_simple(x, W, B), (5,)),
    "sigmoid": (F.Sigmoid, F.sigmoid, ROW),
    "sigmoid_simple": (ZF.Exp, F.sigmoid_simple, ROW),
    "relu": (F.ReLU, F.relu, ROW),
    "leaky_relu": (F.LeakyReLU, lambda x: F.leaky_relu(x, 0.1), ROW),
    "softmax": (F.Softmax, F.softmax, ROW),
    "log_softmax": (F.LogSoftmax, lambda x: F.log_softmax(x, axis=-1), ROW),
    "conv2d": (F.Conv2d, lambda x: F.conv2d(x, K, KB, stride=1, pad=1), IMAGE),
    "conv2d_strided": (F.Conv2d, lambda x: F.conv2d(x, K, None, stride=2, pad=0), IMAGE),
    "conv2d_simple": (F.Im2col, lambda x: F.conv2d_simple(x, K, KB, stride=1, pad=1), IMAGE),
    "deconv2d": (F.Deconv2d, lambda x: F.deconv2d(x, DK, KB, stride=2, pad=1), IMAGE),
    "deconv2d_outsize": (
        F.Deconv2d,
        lambda x: F.deconv2d(x, DK, None, stride=2, pad=1, outsize=(12, 12)),
        IMAGE,
    ),
    "im2col": (F.Im2col, lambda x: F.im2col(x, 3, 2, 1, to_matrix=False), IMAGE),
    "im2col_matrix": (F.Im2col, lambda x: F.im2col(x, 3, 1, 1), IMAGE),
    "col2im": (
        F.Col2im,
        lambda x: F.col2im(F.im2col(x, 3, 2, 1, to_matrix=False), x.shape, 3, 2, 1, False),
        IMAGE,
    ),
    "col2im_matrix": (
        F.Col2im,
        lambda x: F.col2im(F.im2col(x, 3, 1, 1) * 2.0, x.shape, 3, 1, 1),
        IMAGE,
    ),
    "max_pooling": (F.Pooling, lambda x: F.pooling(x, 2, 2), IMAGE),
    "max_pooling_padded": (F.Pooling, lambda x: F.pooling(x, 3, 2, 1), IMAGE),
    "average_pooling": (F.AveragePooling, lambda x: F.average_pooling(x, 3, 2, 1), IMAGE),
    "batch_norm_test_mode": (
        F.normalization._Standardized,
        lambda x: F.batch_norm(x, BN_GAMMA, BN_BETA, BN_MEAN, BN_VAR),
        ROW,
    ),
    "dropout_is_the_identity": (ZF.Mul, lambda x: F.dropout(x, 0.5) * 3.0, ROW),
    "mean_squared_error": (
        F.MeanSquaredError,
        lambda x: F.mean_squared_error(x, x * 0.5 + 1.0),
        ROW,
    ),
}


def case_inputs(name, rng, batch):
    covers, _, row = CASES[name]
    if row is None:  # integer data
        return rng.integers(-3, 4, (batch, 4))
    return rng.standard_normal((batch, *row)).astype(np.float32)


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_runs_in_onnx_runtime_like_zerograd(name, rng, tmp_path):
    covers, fn, _ = CASES[name]
    example, other = case_inputs(name, rng, 3), case_inputs(name, rng, 5)
    proto, results = round_trip(fn, example, other, tmp_path / f"{name}.onnx")
    cap, _ = capture(fn, (Variable(example),), {})
    applied = {type(c.fn) for c in cap.calls}
    assert covers in applied  # the case exercises the class it claims to cover
    allowed = {op for cls in applied for op in CONVERTERS[cls].onnx_ops} | {"Identity", "Cast"}
    assert op_types(proto) <= allowed
    assert op_types(proto) & set(CONVERTERS[covers].onnx_ops)
    assert [r.outputs[0].shape for r in results] == [
        forward(fn, example)[0].shape,
        forward(fn, other)[0].shape,
    ]


def test_softmax_cross_entropy_takes_the_labels_as_a_second_input(rng, tmp_path):
    def loss(x, t):
        return F.softmax_cross_entropy(x, t)

    example = (normal := rng.standard_normal((4, 3)).astype(np.float32), rng.integers(0, 3, 4))
    other = (rng.standard_normal((7, 3)).astype(np.float32), rng.integers(0, 3, 7))
    proto, results = round_trip(loss, example, other, tmp_path / "xent.onnx")
    assert op_types(proto) == {"SoftmaxCrossEntropyLoss"}
    assert [i.name for i in proto.graph.input] == ["input_0", "input_1"]
    assert results[0].outputs[0].shape == ()
    log_p = normal - np.log(np.exp(normal).sum(axis=1, keepdims=True))
    assert np.isclose(forward(loss, *example)[0], -log_p[np.arange(4), example[1]].mean())


def test_a_float16_mean_is_reduce_mean_and_follows_the_batch(rng, tmp_path):
    """F.mean of float16 data is zerograd's Mean (numpy's mean, which adds in float32), and
    exports as ReduceMean: it had no converter. ONNX reads the batch size at run time."""

    def mean(x):
        return F.mean(x) + F.mean(x, axis=1, keepdims=True)

    example = rng.uniform(0.0, 3.0, (3, 4)).astype(np.float16)
    other = rng.uniform(0.0, 3.0, (5, 4)).astype(np.float16)
    zerograd_onnx.export(mean, example, tmp_path / "m.onnx")
    onnx.checker.check_model(str(tmp_path / "m.onnx"), full_check=True)
    assert op_types(onnx.load(str(tmp_path / "m.onnx"))) == {"ReduceMean", "Add"}
    for x in (example, other):
        assert zerograd_onnx.check(mean, tmp_path / "m.onnx", x).ok
        want = x.astype(np.float64).mean() + x.astype(np.float64).mean(axis=1, keepdims=True)
        np.testing.assert_allclose(forward(mean, x)[0], want, rtol=2e-3)


@pytest.mark.parametrize(
    "loss, target",
    [
        (F.sigmoid_cross_entropy, lambda rng, n: rng.integers(0, 2, (n, 1))),
        (F.binary_cross_entropy, lambda rng, n: rng.integers(0, 2, (n, 1))),
        (F.mean_squared_error_simple, lambda rng, n: rng.uniform(0.1, 0.9, (n, 1))),
        (F.softmax_cross_entropy_simple, lambda rng, n: rng.integers(0, 3, n)),
    ],
)
def test_float16_losses_take_their_batch_mean_through_mean(loss, target, rng, tmp_path):
    """The op table's Mean row: float16's sigmoid_cross_entropy, binary_cross_entropy and
    the _simple losses divide by the batch size through Mean (float32 ones through Div)."""
    cols = 3 if loss is F.softmax_cross_entropy_simple else 1
    x = rng.uniform(0.1, 0.9, (4, cols))
    t = target(rng, 4).astype(np.float16) if loss is F.mean_squared_error_simple else target(rng, 4)
    for dtype, has_mean in ((np.float16, True), (np.float32, False)):
        t_dtype = t.astype(dtype) if t.dtype.kind == "f" else t
        cap, _ = capture(
            lambda v, t_dtype=t_dtype: loss(v, t_dtype), (Variable(x.astype(dtype)),), {}
        )
        assert (ZF.Mean in {type(c.fn) for c in cap.calls}) is has_mean, dtype
    if loss is F.mean_squared_error_simple:  # the one whose targets may be an input
        example = (x.astype(np.float16), t)
        other = (
            rng.uniform(0.1, 0.9, (6, 1)).astype(np.float16),
            target(rng, 6).astype(np.float16),
        )
        zerograd_onnx.export(loss, example, tmp_path / "mse.onnx")
        assert "ReduceMean" in op_types(onnx.load(str(tmp_path / "mse.onnx")))
        for args in (example, other):
            assert zerograd_onnx.check(loss, tmp_path / "mse.onnx", args).ok


def test_float16_batch_norm_exports_its_float32_computation_with_casts(rng, tmp_path):
    """float16 batch_norm computes in float32 and rounds once (zerograd_nn's Cast): it
    exports as Cast nodes around the float32 standardization, and ONNX Runtime agrees. A
    running mean of -60000 against inputs of 60000 is past float16's 65504 in x - mean."""
    stats = [
        Parameter(np.asarray(a, np.float16), name=n)
        for a, n in (([1, 2, 3], "g"), ([0, 1, 0], "b"), ([-6e4, 0, 1], "m"), ([4e4, 1, 4], "v"))
    ]

    def norm(x):
        return F.batch_norm(x, *stats)

    example = rng.standard_normal((4, 3)).astype(np.float16)
    example[0, 0] = 6e4
    zerograd_onnx.export(norm, example, tmp_path / "bn.onnx")
    onnx.checker.check_model(str(tmp_path / "bn.onnx"), full_check=True)
    assert "Cast" in op_types(onnx.load(str(tmp_path / "bn.onnx")))
    for x in (example, rng.standard_normal((6, 3)).astype(np.float16)):
        assert zerograd_onnx.check(norm, tmp_path / "bn.onnx", x).ok
        g, b, m, v = (p.data.astype(np.float64) for p in stats)
        want = (x.astype(np.float64) - m) / np.sqrt(v + 2e-5) * g + b
        np.testing.assert_allclose(forward(norm, x)[0], want, rtol=1e-3, atol=1e-3)


def test_every_function_in_the_table_has_a_case():
    covered = {covers for covers, _, _ in CASES.values()} | {F.SoftmaxCrossEntropy, ZF.Mean}
    covered.add(F.arrays.Cast)  # float16 batch_norm, above
    assert covered == set(CONVERTERS)


def test_the_table_names_the_onnx_operators_of_every_converter():
    table = zerograd_onnx.supported()
    assert set(table) == set(CONVERTERS)
    assert all(ops and all(op[0].isupper() for op in ops) for ops in table.values())
    assert table[F.Conv2d] == ("Conv",)
    assert table[ZF.GetItem] == ("Slice", "Gather", "Unsqueeze")


@pytest.mark.parametrize("opset", [zerograd_onnx.MIN_OPSET, 21])
def test_a_convolution_network_exports_at_the_oldest_and_a_newer_opset(opset, rng, tmp_path):
    def net(x):
        h = F.pooling(F.relu(F.conv2d(x, K, KB, pad=1)), 2, 2)
        return F.log_softmax(F.linear(F.reshape(h, (h.shape[0], -1)), _W27), axis=1)

    example = rng.standard_normal((2, *IMAGE)).astype(np.float32)
    other = rng.standard_normal((4, *IMAGE)).astype(np.float32)
    proto, _ = round_trip(net, example, other, tmp_path / "net.onnx", opset=opset)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", opset)]


_W27 = _param(27, 5, name="W27")
