"""The floor: the same workloads by hand in numpy, no graph, no framework.

Forward keeps what backward needs; backward applies the derivative rules; SGD updates the
weights in place. Float32 throughout for the MLP and CNN.
"""

from __future__ import annotations

import inspect
import statistics
import time

import numpy as np
from workloads import F32, LR


def setup(threads: int) -> None:
    """Nothing to do: numpy threads through BLAS (set by environment)."""


def chain(x0: np.ndarray, c: np.ndarray, ops: tuple[str, ...], n: int) -> float:
    """Forward and backward through ``n`` elementwise ops cycling through ``ops``; returns
    the gradient of the input (one element), which every framework must agree on."""
    tape = []
    y = x0
    for i in range(n):
        op = ops[i % len(ops)]
        if op == "add":
            tape.append((op, None))
            y = y + c
        elif op == "mul":
            tape.append((op, None))
            y = y * c
        elif op == "tanh":
            y = np.tanh(y)
            tape.append((op, y))
        else:
            tape.append((op, y))
            y = np.sin(y)
    g = np.ones_like(y)
    for op, saved in reversed(tape):
        if op == "mul":
            g = g * c
        elif op == "tanh":
            g = g * (1 - saved * saved)
        elif op == "sin":
            g = g * np.cos(saved)
    return float(g[0])


def _softmax_ce(y: np.ndarray, t: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean softmax cross-entropy of logits ``y`` and its gradient with respect to ``y``."""
    n = len(y)
    z = y - y.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = -(z[np.arange(n), t] - np.log(s[:, 0])).mean()
    gy = e / s
    gy[np.arange(n), t] -= 1
    gy *= F32(1 / n)
    return float(loss), gy


class MLP:
    """784-1000-1000-10 forward, backward and SGD update by hand."""

    def __init__(self, weights: list[np.ndarray], act: str) -> None:
        self.w = [w.copy() for w in weights]
        self.sigmoid = act == "sigmoid"

    def _act(self, a: np.ndarray) -> np.ndarray:
        if self.sigmoid:
            return _sigmoid(a)
        return np.maximum(a, F32(0))

    def _dact(self, h: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.sigmoid:
            return g * h * (F32(1) - h)
        return g * (h > 0)

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        W1, b1, W2, b2, W3, b3 = self.w
        h1 = self._act(x @ W1 + b1)
        h2 = self._act(h1 @ W2 + b2)
        loss, gy = _softmax_ce(h2 @ W3 + b3, t)
        gW3, gb3 = h2.T @ gy, gy.sum(axis=0)
        g2 = self._dact(h2, gy @ W3.T)
        gW2, gb2 = h1.T @ g2, g2.sum(axis=0)
        g1 = self._dact(h1, g2 @ W2.T)
        gW1, gb1 = x.T @ g1, g1.sum(axis=0)
        for w, g in zip(self.w, (gW1, gb1, gW2, gb2, gW3, gb3)):
            w -= F32(LR) * g
        return loss

    def weights(self) -> list[np.ndarray]:
        return self.w


_QUARTERS = ((0, 0), (0, 1), (1, 0), (1, 1))  # a 2x2 window's positions, in window order


class CNN:
    """By hand, written for speed in numpy: the fastest form of each piece measured here.

    The conv is im2col (9 shifted views of the zero-padded image) and one batched matmul,
    the bias added in place. The 2x2 pooling takes its maximum over row pairs first (one
    op on contiguous rows of the image) and then over column pairs; each window's winner
    is its first maximum in window order, as in zerograd and Chainer, and the backward
    writes ``gy`` times each winner mask straight into the 4 strided quarters of the
    image's gradient (no zero fill, no col2im). The relu mask multiplies in place, and the
    weight gradient reuses the forward's im2col (a framework recomputes it, or keeps it).
    Every large array is a buffer made on the first step and written with ``out=`` after
    it: in a fresh process glibc gives freed large blocks back to the kernel, and a step
    that allocates them anew pays about 2,000 page faults (2.3 ms) for them.
    ``packages/nn/tests/test_examples.py`` checks its loss and updates against zerograd's,
    ties included.
    """

    def __init__(self, weights: list[np.ndarray]) -> None:
        self.w = [w.copy() for w in weights]
        self.buffers: dict[str, np.ndarray] = {}

    def _buffer(self, name: str, shape: tuple, dtype: type = F32) -> np.ndarray:
        b = self.buffers.get(name)
        if b is None or b.shape != shape:
            b = self.buffers[name] = np.zeros(shape, dtype)
        return b

    def step(self, x: np.ndarray, t: np.ndarray) -> float:
        W, b, Wl, bl = self.w
        buf = self._buffer
        n, _, H, Wd = x.shape
        oh, ow = H // 2, Wd // 2
        xpad = buf("xpad", (n, H + 2, Wd + 2))  # its border stays zero
        xpad[:, 1:-1, 1:-1] = x[:, 0]
        col = buf("col", (n, 9, H, Wd))
        for k in range(9):
            i, j = divmod(k, 3)
            col[:, k] = xpad[:, i : i + H, j : j + Wd]
        col = col.reshape(n, 9, H * Wd)
        a = np.matmul(W.reshape(16, 9), col, out=buf("a", (n, 16, H * Wd)))
        a += b[:, None]
        h6 = np.maximum(a, F32(0), out=buf("h", a.shape)).reshape(n, 16, oh, 2, ow, 2)
        rows = np.maximum(h6[:, :, :, 0], h6[:, :, :, 1], out=buf("rows", (n, 16, oh, ow, 2)))
        p = np.maximum(rows[..., 0], rows[..., 1], out=buf("p", (n, 16, oh, ow)))
        taken = buf("taken", p.shape, bool)
        hits = [buf(f"hit{q}", p.shape, bool) for q in range(4)]
        for q, ((i, j), hit) in enumerate(zip(_QUARTERS, hits)):
            np.equal(h6[:, :, :, i, :, j], p, out=hit)
            if q:
                hit &= ~taken  # a tie: an earlier quarter won
                taken |= hit
            else:
                taken[...] = hit
        flat = p.reshape(n, -1)
        loss, gy = _softmax_ce(flat @ Wl + bl, t)
        gWl, gbl = flat.T @ gy, gy.sum(axis=0)
        gp = (gy @ Wl.T).reshape(p.shape)
        gh = buf("gh", h6.shape)
        for (i, j), hit in zip(_QUARTERS, hits):
            np.multiply(gp, hit, out=gh[:, :, :, i, :, j])
        ga = gh.reshape(n, 16, H * Wd)
        ga *= np.greater(a, F32(0), out=buf("relu", a.shape, bool))
        gW = np.matmul(ga, col.transpose(0, 2, 1)).sum(axis=0).reshape(W.shape)
        gb = ga.sum(axis=(0, 2))
        for w, g in zip(self.w, (gW, gb, gWl, gbl)):
            w -= F32(LR) * g
        return loss

    def weights(self) -> list[np.ndarray]:
        return self.w


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """zerograd's formula and calls (the numpy backend's sigmoid kernel)."""
    with np.errstate(over="ignore"):  # exp(-z) overflows to inf for very negative z: y is 0
        e = np.exp(-z)
    e += F32(1)
    return np.divide(F32(1), e, out=e)


class HandLSTM:
    """An RNN example trained by hand: the book's LSTM (eight linear maps: four gates from
    the input with biases, four from ``h``), then Linear(out); float32, Adam. The same array
    work as the example (matmuls of the same shapes, the same sigmoid formula, gradients
    summed step by step, Adam's in-place rule), with no graph and no framework: the floor
    of the replay's RNN rows.

    ``vocab`` puts an embedding (vocab, in_size) in front, as char_rnn's EmbedID: its
    gradient is zeros with each step's rows added at the ids. ``loss`` is ``"mse"``
    (lstm_sine) or ``"softmax"`` (softmax cross-entropy against integer labels, char_rnn,
    by ``_softmax_ce`` as in the MLP and CNN: one softmax for the loss and the gradient,
    where zerograd's vjp computes it again, so the floor is if anything low).
    """

    GATES = "fiou"

    def __init__(
        self,
        in_size: int,
        hidden: int,
        out_size: int,
        *,
        vocab: int | None = None,
        loss: str = "mse",
        alpha: float = 0.001,
        seed: int = 0,
    ) -> None:
        rng = np.random.default_rng(seed)

        def normal(shape: tuple, scale: float) -> np.ndarray:
            return (rng.standard_normal(shape) * scale).astype(F32)

        p = {}
        if vocab is not None:
            p["We"] = normal((vocab, in_size), 1.0)
        for g in self.GATES:
            p["Wx" + g] = normal((in_size, hidden), 1 / np.sqrt(in_size))
            p["bx" + g] = np.zeros(hidden, F32)
            p["Wh" + g] = normal((hidden, hidden), 1 / np.sqrt(hidden))
        p["Wy"] = normal((hidden, out_size), 1 / np.sqrt(hidden))
        p["by"] = np.zeros(out_size, F32)
        self.p, self.embed, self.loss, self.alpha = p, vocab is not None, loss, alpha
        self.m = {k: np.zeros_like(v) for k, v in p.items()}
        self.v = {k: np.zeros_like(v) for k, v in p.items()}
        self.scratch = {k: np.empty_like(v) for k, v in p.items()}
        self.t = 0
        self.h = self.c = None

    def _head(self, y: np.ndarray, t: np.ndarray) -> tuple[float, np.ndarray]:
        """The step's loss and its gradient with respect to the scores ``y``."""
        if self.loss == "softmax":
            return _softmax_ce(y, t)
        n = y.shape[0]
        diff = y - t
        return float(np.sum(diff * diff) / n), diff * F32(2.0 / n)

    def window(self, xs: list, ts: list) -> float:
        """Forward over the window, backward through it, one Adam update; the loss."""
        p, h, c = self.p, self.h, self.c
        saved, loss = [], 0.0
        for ids, t in zip(xs, ts):
            x = p["We"][ids] if self.embed else ids
            z = {}
            for g in self.GATES:
                a = x @ p["Wx" + g]
                a += p["bx" + g]
                z[g] = a if h is None else a + h @ p["Wh" + g]
            f, i, o, u = _sigmoid(z["f"]), _sigmoid(z["i"]), _sigmoid(z["o"]), np.tanh(z["u"])
            c_new = i * u if c is None else f * c + i * u
            tc = np.tanh(c_new)
            h_new = o * tc
            y = h_new @ p["Wy"]
            y += p["by"]
            step_loss, gy = self._head(y, t)
            loss = loss + step_loss
            saved.append((ids, x, h, c, f, i, o, u, tc, h_new, gy))
            h, c = h_new, c_new
        self.h, self.c = h, c
        self._update(self._backward(saved))
        return float(loss)

    def _backward(self, saved: list) -> dict:
        p, grads = self.p, {}

        def add(k: str, g: np.ndarray) -> None:
            if k in grads:
                grads[k] += g
            else:
                grads[k] = g

        gh_next = gc_next = None
        for ids, x, h, c, f, i, o, u, tc, h_new, gy in reversed(saved):
            add("Wy", h_new.T @ gy)
            add("by", gy.sum(axis=0))
            gh = gy @ p["Wy"].T
            if gh_next is not None:
                gh = gh + gh_next
            gc = gh * o * (1 - tc * tc)
            if gc_next is not None:
                gc = gc + gc_next
            gz = {"i": gc * u * i * (1 - i), "o": gh * tc * o * (1 - o), "u": gc * i * (1 - u * u)}
            gc_next = None
            if c is not None:
                gz["f"] = gc * c * f * (1 - f)
                gc_next = gc * f
            gh_next = gx = None
            for g, gzg in gz.items():
                add("Wx" + g, x.T @ gzg)
                add("bx" + g, gzg.sum(axis=0))
                if self.embed:
                    back = gzg @ p["Wx" + g].T
                    gx = back if gx is None else gx + back
                if h is not None:
                    add("Wh" + g, h.T @ gzg)
                    back = gzg @ p["Wh" + g].T
                    gh_next = back if gh_next is None else gh_next + back
            if self.embed:
                ge = np.zeros_like(p["We"])
                np.add.at(ge, ids, gx)
                add("We", ge)
        return grads

    def _update(self, grads: dict, b1: float = 0.9, b2: float = 0.999) -> None:
        self.t += 1
        step = self.alpha * np.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        for k, g in grads.items():
            adam_into(self.p[k], g, self.m[k], self.v[k], self.scratch[k], step, b1, b2)


def adam_into(
    p: np.ndarray,
    g: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    s: np.ndarray,
    step: float,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> None:
    """One Adam step of ``p`` in place (moments ``m``, ``v``; scratch ``s``): zerograd's
    update rule, call for call, so its bits are zerograd's; ``step`` is bias-corrected."""
    np.subtract(g, m, out=s)
    np.multiply(s, 1 - b1, out=s)
    np.add(m, s, out=m)
    np.multiply(g, g, out=s)
    np.subtract(s, v, out=s)
    np.multiply(s, 1 - b2, out=s)
    np.add(v, s, out=v)
    np.sqrt(v, out=s)
    np.add(s, eps, out=s)
    np.divide(m, s, out=s)
    np.multiply(s, -step, out=s)
    np.add(p, s, out=p)


def defaults(fn: object) -> dict:
    """The default values of ``fn``'s parameters, by name."""
    params = inspect.signature(fn).parameters.values()
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def hand_rnn(example: str) -> tuple[HandLSTM, object, int, object]:
    """``(net, loader, window length, prepare)`` of an example, with the sizes its ``train``
    and model take by default (lstm_sine: LSTM(100) on SinCurve, batch 30, windows of 30;
    char_rnn: EmbedID(32), LSTM(128) on its tales, batch 16, windows of 25), read from the
    example itself so that the floor follows it. The data comes through the example's own
    dataset and loader."""
    import char_rnn  # examples/, on the path (child.rnn)
    import lstm_sine

    from zerograd_nn import SeqDataLoader
    from zerograd_nn.datasets import SinCurve, TextCharDataset

    if example == "lstm_sine":
        d = defaults(lstm_sine.train)
        loader = SeqDataLoader(SinCurve(train=True), batch_size=d["batch_size"])
        net = HandLSTM(1, d["hidden_size"], 1)
        return net, loader, d["bptt_length"], lambda a: a.astype(np.float32)
    if example == "char_rnn":
        d, m = defaults(char_rnn.train), defaults(char_rnn.CharLSTM)
        data = TextCharDataset(path=d["text_path"])
        vocab = data.vocab_size
        net = HandLSTM(  # alpha: char_rnn.train's Adam(alpha=0.005), not a parameter of it
            m["embed_size"], m["hidden_size"], vocab, vocab=vocab, loss="softmax", alpha=0.005
        )
        loader = SeqDataLoader(data, batch_size=d["batch_size"])
        return net, loader, d["bptt_length"], lambda a: a
    raise ValueError(f"numpy-hand has no {example} (lstm_sine and char_rnn only)")


def rnn(example: str, epochs: int, skip: int) -> dict:
    """Median CPU ms per epoch of ``example`` trained by hand, after the first ``skip``."""
    from _bptt import windows  # examples/, on the path (child.rnn)

    np.random.seed(0)  # as the examples do: SinCurve draws its noise from numpy's state
    net, loader, length, prepare = hand_rnn(example)
    times, total = [], 0.0
    for _ in range(epochs):
        started = time.process_time()
        net.h = net.c = None
        total = 0.0
        for xs, ts in windows(loader, length, prepare):
            total += net.window(xs, ts)
        times.append(time.process_time() - started)
    return {"ms": statistics.median(times[skip:]) * 1e3, "loss": total / len(loader)}


def inputs(x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The batch as it is."""
    return x, t
