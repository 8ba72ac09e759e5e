"""Config is per thread and per asyncio task."""

import asyncio
import threading

import numpy as np

from zerograd import Config, Variable, no_grad, test_mode, using_config


def test_defaults_and_using_config_restores():
    assert Config.enable_backprop is True and Config.train is True
    with using_config("train", False):
        assert Config.train is False
        with test_mode():
            assert Config.train is False
    assert Config.train is True


def test_restores_after_exception():
    try:
        with no_grad():
            raise ValueError
    except ValueError:
        pass
    assert Config.enable_backprop is True


def test_no_grad_in_one_thread_does_not_affect_another():
    inside = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        with no_grad():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    assert inside.wait(5), "the worker never entered no_grad"
    seen["main"] = Config.enable_backprop
    y = Variable(np.ones(1)) * 2
    seen["recorded"] = y.creator is not None
    release.set()
    t.join()
    assert seen == {"main": True, "recorded": True}


def test_each_new_thread_starts_from_defaults():
    result = []
    with no_grad():
        t = threading.Thread(target=lambda: result.append(Config.enable_backprop))
        t.start()
        t.join()
    assert result == [True]


def test_asyncio_tasks_are_isolated():
    async def off(flag, out):
        with no_grad():
            flag.set()
            await asyncio.sleep(0.01)
            out.append(("off", Config.enable_backprop))

    async def on(flag, out):
        await flag.wait()
        out.append(("on", Config.enable_backprop))

    async def main():
        flag, out = asyncio.Event(), []
        await asyncio.gather(off(flag, out), on(flag, out))
        return out

    assert sorted(asyncio.run(main())) == [("off", False), ("on", True)]


def test_asyncio_to_thread_carries_the_tasks_config_to_its_thread():
    """The tutorial's "Threads and async tasks": asyncio.to_thread runs in the context of
    the task that called it, so no_grad() there holds in the worker thread, and only
    there; a plain new thread starts from the defaults."""

    def read():
        return Config.enable_backprop, Config.train

    async def main():
        with no_grad(), test_mode():
            inside = await asyncio.to_thread(read)
        return inside, await asyncio.to_thread(read)

    assert asyncio.run(main()) == ((False, False), (True, True))
    assert read() == (True, True)


def test_unknown_option_error_names_known_ones():
    try:
        Config.trian  # noqa: B018
    except AttributeError as e:
        assert "'trian'" in str(e) and "enable_backprop" in str(e)
    else:
        raise AssertionError("expected AttributeError")


def test_repr_lists_options():
    assert "enable_backprop=True" in repr(Config)


def test_two_threads_naming_a_new_option_at_once_each_see_their_own_value():
    """Both threads look the new option up before either files its variable (a barrier
    at each look-up): each must read its own value and leave its block without an error."""
    barrier = threading.Barrier(2)

    class Options(dict):  # Config's table of options, where the two threads meet
        def get(self, key, default=None):
            value = super().get(key, default)
            if key == "thread_test_option":
                barrier.wait(timeout=5)
            return value

    seen, errors = {}, []

    def work(k):
        try:
            with using_config("thread_test_option", k):
                seen[k] = Config.thread_test_option
        except Exception as exc:  # a thread's failure must fail the test
            errors.append(exc)

    table = Config._vars
    object.__setattr__(Config, "_vars", Options(table))
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        options = Config._vars
        object.__setattr__(Config, "_vars", table)
        table.update(options)
    assert errors == []
    assert seen == {1: 1, 2: 2}
    assert Config.thread_test_option is None  # the option's default here: unset
