"""Engine rules: accumulation, diamonds, order, retain_grad, weak outputs, long chains."""

import gc
import weakref

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Function, Variable, no_grad, using_config
from zerograd.backends import as_numpy


def test_gradient_accumulates_for_reused_variable(arr):
    x = Variable(arr([3.0]))
    y = x + x + x * x
    y.backward()
    np.testing.assert_allclose(as_numpy(x.grad), [2 + 2 * 3.0])


def test_diamond_graph_visits_each_function_once(arr):
    calls = []

    class Count(Function):
        def forward(self, x):
            calls.append(1)
            return x * 2

        def backward(self, gy):
            calls.append(-1)
            return gy * 2

    x = Variable(arr([2.0]))
    a = Count()(x)
    y = F.square(a) + F.square(a)  # a feeds two branches that meet again
    y.backward()
    assert calls.count(-1) == 1
    # y = 2 * (2x)^2 = 8 x^2 -> 16 x
    np.testing.assert_allclose(as_numpy(x.grad), [32.0])


def test_generation_order_on_uneven_branches(arr):
    x = Variable(arr([1.0]))
    a = F.exp(x)
    long = F.sin(F.cos(F.tanh(a)))  # three more functions on one branch than the other
    y = long + a
    y.backward()
    t = np.tanh(np.e)
    expected = np.cos(np.cos(t)) * -np.sin(t) * (1 - t**2) * np.e + np.e
    np.testing.assert_allclose(as_numpy(x.grad), [expected])


class Tag(Function):
    """The identity, logging its name when its derivative runs."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def forward(self, x):
        return x

    def backward(self, gy):
        self.log.append(self.name)
        return gy


def test_a_function_runs_as_soon_as_its_outputs_uses_are_done(arr):
    # y = x_0*w + x_1*w + ...: each product's only use is its sum, so the product runs
    # right after that sum (an order by generation would run every sum first)
    log = []
    w = Variable(arr([0.5]))
    xs = [Variable(arr([float(i)])) for i in range(5)]
    y = Tag("m0", log)(xs[0] * w)
    for i in range(1, 5):
        y = Tag(f"s{i}", log)(y + Tag(f"m{i}", log)(xs[i] * w))
    y.backward()
    assert log == ["s4", "m4", "s3", "m3", "s2", "m2", "s1", "m1", "m0"]
    np.testing.assert_allclose(as_numpy(w.grad), [0.0 + 1 + 2 + 3 + 4])
    assert [float(as_numpy(x.grad)[0]) for x in xs] == [0.5] * 5


class Stop(Function):
    """The identity whose derivative is None: nothing flows back through it."""

    def forward(self, x):
        return x

    def backward(self, gy):
        return None


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_function_no_gradient_reaches_still_lets_its_inputs_run(arr, create_graph):
    x = Variable(arr([3.0]))
    a = F.square(x)
    u = F.sin(a)  # its only use is Stop: sin gets no gradient at all
    y = Stop()(u) + a  # Square waits for Sin (no gradient) and for the Add
    y.backward(create_graph=create_graph)
    np.testing.assert_allclose(as_numpy(x.grad.data), [6.0])  # d(x^2)/dx, once
    assert u.grad is None


def test_the_cyclic_collector_is_paused_during_the_walk_and_restored(arr):
    seen = []

    class Probe(Function):
        def forward(self, x):
            return x

        def backward(self, gy):
            seen.append(gc.isenabled())
            if len(seen) == 2:
                raise ValueError("probe failed")
            return gy

    assert gc.isenabled()
    Probe()(Variable(arr([1.0]))).backward()
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ValueError, match="probe failed"):
        Probe()(Variable(arr([1.0]))).backward()
    assert seen == [False, False] and gc.isenabled()  # restored after a failure too
    gc.disable()
    try:
        Probe()(Variable(arr([1.0]))).backward()
        assert not gc.isenabled()  # a collector the user turned off stays off
    finally:
        gc.enable()


def test_a_backward_turns_the_collector_back_on_though_another_thread_switched_it_off(arr):
    """The tutorial's "Threads and async tasks": the collector is process-wide; a walk
    that paused it enables it when it ends, also where another thread called
    gc.disable() while it ran (the walk cannot tell that from its own pause)."""
    import threading

    class SwitchOffElsewhere(Function):
        def forward(self, x):
            return x

        def backward(self, gy):
            other = threading.Thread(target=gc.disable)
            other.start()
            other.join()
            return gy

    assert gc.isenabled()
    try:
        SwitchOffElsewhere()(Variable(arr([1.0]))).backward()
        assert gc.isenabled()
    finally:
        gc.enable()


def test_second_backward_needs_cleargrad_and_is_idempotent_after_it(arr):
    x = Variable(arr([2.0]))
    y = x * x
    y.backward(retain_grad=True)
    first = as_numpy(x.grad)
    x.cleargrad()
    y.grad = None
    y.backward()
    np.testing.assert_allclose(as_numpy(x.grad), first)


def test_retain_grad_false_frees_intermediate_gradients(arr):
    x = Variable(arr([1.0, 2.0]))
    a = F.sin(x)
    y = F.sum(a)
    y.backward()
    assert a.grad is None and y.grad is None
    assert x.grad is not None


def test_retain_grad_true_keeps_them(arr):
    x = Variable(arr([1.0, 2.0]))
    a = F.sin(x)
    y = F.sum(a)
    y.backward(retain_grad=True)
    np.testing.assert_allclose(as_numpy(a.grad), [1.0, 1.0])
    np.testing.assert_allclose(as_numpy(y.grad), 1.0)


def test_outputs_are_weak_and_graph_is_freed_without_gc(arr):
    gc.disable()
    try:
        x = Variable(arr(np.ones(3)))
        y = F.tanh(F.exp(x))
        f = weakref.ref(y.creator)
        mid = weakref.ref(y.creator.inputs[0])
        del y
        assert f() is None and mid() is None  # freed by reference counting alone
    finally:
        gc.enable()


def test_100k_op_chain_forward_backward_and_free(arr):
    x = Variable(arr([0.5]))
    y = x
    for _ in range(100_000):
        y = y + 1e-6
    y.backward()
    np.testing.assert_allclose(as_numpy(x.grad), [1.0])
    np.testing.assert_allclose(as_numpy(y), [0.6], rtol=1e-9)
    creator = weakref.ref(y.creator)
    del y
    assert creator() is None


def test_create_graph_gives_third_derivative(arr):
    x = Variable(arr([0.7]))
    y = F.sin(x)
    grads = []
    for _ in range(3):
        x.cleargrad()
        y.backward(create_graph=True)
        y = x.grad
        grads.append(float(y.data[0]))
    np.testing.assert_allclose(grads, [np.cos(0.7), -np.sin(0.7), -np.cos(0.7)])


def test_without_create_graph_gradient_has_no_graph(arr):
    x = Variable(arr([0.7]))
    F.sin(x).backward()
    assert x.grad.creator is None


def test_no_grad_does_not_record_and_restores(arr):
    x = Variable(arr([1.0]))
    with no_grad():
        y = x * 2
    assert y.creator is None
    z = x * 2
    assert z.creator is not None


def test_backward_on_leaf_sets_ones(arr):
    x = Variable(arr([[1.0, 2.0]], "float32"))
    x.backward()
    assert as_numpy(x.grad).dtype == np.float32
    np.testing.assert_array_equal(as_numpy(x.grad), [[1.0, 1.0]])


def test_unchain_backward_cuts_the_graph(arr):
    x = Variable(arr([1.0]))
    h = F.exp(x)
    y = F.sin(h)
    h.unchain_backward()
    y.unchain_backward()
    assert h.creator is None
    y.backward()
    assert x.grad is None


def test_backward_must_return_one_gradient_per_input(arr):
    class Bad(Function):
        def forward(self, a, b):
            return a + b

        def backward(self, gy):
            return gy

    y = Bad()(Variable(arr([1.0])), Variable(arr([2.0])))
    with pytest.raises(RuntimeError, match="returned 1 gradients for 2 inputs"):
        y.backward()


def test_wrong_gradient_shape_is_reported(arr):
    class Bad(Function):
        def forward(self, a):
            return a[0] + a[1]

        def backward(self, gy):
            return gy

    y = Bad()(Variable(arr([1.0, 2.0])))
    with pytest.raises(RuntimeError, match=r"shape \(\) for an input of shape \(2,\)"):
        y.backward()


def test_array_gradients_from_user_functions_are_wrapped(arr):
    class Double(Function):
        def forward(self, a):
            return a * 2

        def backward(self, gy):
            return gy.data * 2  # a plain array, as in the book's early steps

    x = Variable(arr([1.0]))
    Double()(x).backward()
    assert isinstance(x.grad, Variable)
    np.testing.assert_allclose(as_numpy(x.grad), [2.0])


def test_book_newton_loop_that_assigns_a_numpy_scalar_to_data():
    # The book's Newton loop (step 33; docs/tutorial/higher-order.md) assigns the result of
    # 0-d arithmetic, a numpy scalar, to x.data: the next forward pass must accept it.
    x = Variable(np.array(2.0))
    for _ in range(10):
        y = x**4 - 2 * x**2
        x.cleargrad()
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        gx2 = x.grad
        x.data = x.data - gx.data / gx2.data
        assert isinstance(y.data, np.ndarray) and isinstance(gx2.data, np.ndarray)
    assert float(x.data) == pytest.approx(1.0, abs=1e-12)


def test_a_backward_inside_a_backward_on_the_same_graph_gives_both_gradients(arr):
    x = Variable(arr([0.5]))
    a = F.exp(x)  # shared by the outer graph and the inner backward

    class Inner(Function):
        def forward(self, v):
            return v

        def backward(self, gy):
            with using_config("enable_backprop", True):  # the outer walk records nothing
                F.sin(a).backward()  # walks a's creator while the outer walk counts it
            return gy

    y = Inner()(a) + a
    y.backward()
    e = np.exp(0.5)
    np.testing.assert_allclose(as_numpy(x.grad.data), [np.cos(e) * e + 2 * e])


def test_a_thread_builds_and_walks_a_new_graph_on_a_leaf_while_another_walks_through_it(arr):
    """The tutorial's "Threads and async tasks": while one thread's walk is held inside a
    backward of a graph through x, another builds a graph on x and walks it; x's gradient
    is then the sum of both, as one walk after the other gives."""
    import threading

    inside, built = threading.Event(), threading.Event()

    class Held(Function):
        def forward(self, v):
            return v

        def backward(self, gy):
            inside.set()
            assert built.wait(5)
            return gy

    x = Variable(arr([0.5]))
    y = F.sum(Held()(F.exp(x)))
    errors = []

    def walk():
        try:
            y.backward()
        except Exception as exc:  # a thread's failure must fail the test
            errors.append(exc)

    worker = threading.Thread(target=walk)
    worker.start()
    assert inside.wait(5)
    z = F.sum(F.sin(x) * 3.0)  # built and walked while the other walk holds x's graph
    z.backward()
    built.set()
    worker.join(5)
    assert errors == [] and not worker.is_alive()
    np.testing.assert_allclose(as_numpy(x.grad.data), [np.exp(0.5) + 3 * np.cos(0.5)])


def test_two_threads_walking_a_shared_subgraph_give_what_one_after_the_other_gives(arr):
    import threading

    barriers = []

    class Meet(Function):  # the walk waits here until the other thread's walk arrives too
        def __init__(self, barrier):
            self.barrier = barrier

        def forward(self, v):
            return v

        def backward(self, gy):
            if self.barrier is not None:
                self.barrier.wait(timeout=5)
            return gy

    def build():
        x = Variable(arr([0.5, -1.5]))
        # the shared subgraph, which both walks count and visit; each walk meets the other
        # at its own first function (both have counted) and inside the shared part
        a = Meet(barriers[1] if barriers else None)(F.tanh(F.exp(x) * 0.7))
        b0 = barriers[0] if barriers else None
        y1 = F.sum(Meet(b0)(F.sin(a) * a))
        y2 = F.sum(Meet(b0)(F.cos(a) * 3.0))
        return x, y1, y2

    x, y1, y2 = build()  # one after the other: x.grad is the sum of both gradients
    y1.backward()
    y2.backward()
    want = as_numpy(x.grad.data)

    barriers[:] = [threading.Barrier(2), threading.Barrier(2)]
    x, y1, y2 = build()
    errors = []

    def work(y):
        try:
            y.backward()
        except Exception as exc:  # a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(y,)) for y in (y1, y2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert as_numpy(x.grad.data).tobytes() == want.tobytes()  # g1 + g2 either way round


def test_backward_in_several_threads_gives_each_its_gradient_and_restores_the_collector(arr):
    import threading

    results, errors = {}, []

    def work(i):
        try:
            for _ in range(50):
                x = Variable(arr([float(i)]))
                y = F.sum(F.square(F.tanh(x)) * (i + 1))
                y.backward()
            results[i] = float(as_numpy(x.grad.data)[0])
        except Exception as exc:  # a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i in range(4):  # d/dx (i+1) tanh(x)^2 = 2 (i+1) tanh(x) (1 - tanh(x)^2)
        t = np.tanh(float(i))
        np.testing.assert_allclose(results[i], 2 * (i + 1) * t * (1 - t * t), rtol=1e-6)
    assert gc.isenabled()


def test_a_walk_that_another_thread_retains_gradients_under_gives_what_one_after_the_other_gives(
    arr,
):
    """Walk A has read the shared intermediate h's held gradient (None) when walk B, in
    another thread, stores one onto h (retain_grad); A must end as it would after B."""
    import threading

    class Other(Function):  # h's creator: A's walk reaches it after reading h.grad
        def __init__(self, other):
            self.other = other

        def forward(self, v):
            return v

        def backward(self, gy):
            if self.other:  # (once) B runs from start to end, here
                t = threading.Thread(target=self.other.pop())
                t.start()
                t.join()
            return gy

    def build(other=None):
        x = Variable(arr([0.5, -1.5]))
        h = Other(other)(F.tanh(x * 0.7))
        return x, h, F.sum(h * h), F.sum(F.exp(h))

    x, h, ya, yb = build()  # B, then A
    yb.backward(retain_grad=True)
    ya.backward(retain_grad=True)
    want = [as_numpy(v.grad.data).tobytes() for v in (x, h)]

    errors = []

    def walk_b():
        try:
            yb.backward(retain_grad=True)
        except Exception as exc:  # a thread's failure must fail the test
            errors.append(exc)

    other = [walk_b]
    x, h, ya, yb = build(other)
    ya.backward(retain_grad=True)
    assert errors == []
    assert [as_numpy(v.grad.data).tobytes() for v in (x, h)] == want
