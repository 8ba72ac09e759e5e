"""Smoke test run by `nox -s smoke` in a venv holding only zerograd + zerograd-numpy wheels."""

import importlib.util

import numpy as np

import zerograd
import zerograd.functions as F
from zerograd import Variable
from zerograd.backends import list_backends

names = [b.name for b in list_backends()]
assert names == ["numpy"], names
for absent in ("zerograd_nn", "zerograd_viz", "zerograd_cupy"):
    assert importlib.util.find_spec(absent) is None, f"{absent} should not be installed"

x = Variable(np.linspace(-1, 1, 5, dtype=np.float32))
y = F.sum(F.tanh(x) * 2.0)
y.backward()
expected = 2 * (1 - np.tanh(x.data) ** 2)
assert x.grad.dtype == np.float32
assert np.allclose(x.grad.data, expected, atol=1e-6)


@zerograd.static_graph
def step(v):
    out = F.sum(F.tanh(v) * 2.0)
    out.backward()
    return out


for _ in range(4):  # one eager call, two recorded, then a replay
    v = Variable(x.data)
    step(v)
assert step.counts["replayed"] == 1 and v.grad.data.tobytes() == x.grad.data.tobytes()
print(f"smoke ok: zerograd {zerograd.__version__}, backends {names}, grad {x.grad.data}")
