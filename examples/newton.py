"""Newton's method with second derivatives computed by zerograd (the book's step 33).

Minimizes f(x) = x^4 - 2x^2 starting from x = 2, printing each step.

    python examples/newton.py
"""

import argparse

import numpy as np

from zerograd import Variable


def f(x):
    return x**4 - 2 * x**2


# no options: --help says what it does, and a mistyped option is refused, not ignored
argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()

x = Variable(np.array(2.0))
for i in range(10):
    y = f(x)
    x.cleargrad()
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    gx2 = x.grad
    print(f"step {i}: x = {x.data:.10f}  f'(x) = {gx.data:+.3e}  f''(x) = {gx2.data:.4f}")
    x.data = x.data - gx.data / gx2.data
print(f"minimum at x = {x.data:.10f} (exact: 1)")
