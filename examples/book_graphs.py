"""The book's computational graphs, drawn by zerograd-viz (steps 26 and 35).

Writes, as SVG (needs Graphviz's ``dot``):

- ``goldstein.svg``: the Goldstein-Price function of x and y (step 26);
- ``tanh_d1.svg``, ``tanh_d2.svg``, ``tanh_d3.svg``: the graphs that compute the first,
  second and third derivatives of tanh, built by backward passes with
  ``create_graph=True`` (step 35; each order's graph grows from the one before).

Prints each derivative's value at x = 1 next to the closed form, and what it wrote.

    python examples/book_graphs.py [--out .] [--orders 3] [--dot-timeout 60]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _args import out_folder, positive_float, positive_int  # examples/_args.py
from _interrupt import run_main  # examples/_interrupt.py

import zerograd_nn.functional as F
from zerograd import Variable

try:
    from zerograd_viz import GraphvizError, GraphvizTimeoutError, plot_dot_graph
except ImportError:
    raise SystemExit(
        "book_graphs.py needs zerograd-viz; from the repository's root: "
        "pip install ./packages/viz (and Graphviz's dot)"
    ) from None


def goldstein(x, y):
    return (1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x**2 - 14 * y + 6 * x * y + 3 * y**2)) * (
        30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x**2 + 48 * y - 36 * x * y + 27 * y**2)
    )


def tanh_derivatives(orders: int) -> list[Variable]:
    """The graphs of d^k tanh(x)/dx^k at x = 1, for k = 1 .. orders."""
    x = Variable(np.array(1.0), name="x")
    y = F.tanh(x)
    y.name = "y"
    y.backward(create_graph=True)
    found = []
    for k in range(1, orders + 1):
        gx = x.grad
        gx.name = f"gx{k}"
        found.append(gx)
        x.cleargrad()
        gx.backward(create_graph=True)
    return found


def draw(args: argparse.Namespace) -> None:
    """Print the derivatives and write their graphs into ``args.out``."""
    x, y = Variable(np.array(1.0), name="x"), Variable(np.array(1.0), name="y")
    z = goldstein(x, y)
    z.name = "z"
    z.backward()
    print(f"goldstein(1, 1) = {float(z.data):g}; dz/dx = {float(x.grad.data):g}, "
          f"dz/dy = {float(y.grad.data):g}")  # fmt: skip
    plot_dot_graph(z, verbose=False, to_file=args.out / "goldstein.svg", timeout=args.dot_timeout)
    print("wrote", args.out / "goldstein.svg")

    t = math.tanh(1.0)
    exact = [1 - t**2, -2 * t * (1 - t**2), -2 * (1 - t**2) * (1 - 3 * t**2)]
    for k, gx in enumerate(tanh_derivatives(args.orders), start=1):
        closed = f" (closed form {exact[k - 1]:+.6f})" if k <= len(exact) else ""
        print(f"d^{k} tanh/dx^{k} at 1 = {float(gx.data):+.6f}{closed}")
        plot_dot_graph(
            gx, verbose=False, to_file=args.out / f"tanh_d{k}.svg", timeout=args.dot_timeout
        )
        print("wrote", args.out / f"tanh_d{k}.svg")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=out_folder, default=".", help="folder for the SVGs (default: .)"
    )
    parser.add_argument(
        "--orders", type=positive_int, default=3, help="derivatives of tanh to draw (default: 3)"
    )
    parser.add_argument(
        "--dot-timeout",
        type=positive_float,
        default=60.0,
        help="seconds Graphviz may take for one graph (default: 60)",
    )
    args = parser.parse_args()
    try:
        draw(args)
    except GraphvizTimeoutError:  # each order's graph is about 3 times the last one
        raise SystemExit(
            f"book_graphs.py: Graphviz's dot did not draw a graph within {args.dot_timeout:g} "
            f"s and was stopped; draw fewer --orders than {args.orders}, or give "
            "--dot-timeout more seconds"
        ) from None
    except GraphvizError as exc:  # dot missing, or failing: say why in one line
        raise SystemExit(f"book_graphs.py: {exc}") from None


if __name__ == "__main__":
    run_main(main)
