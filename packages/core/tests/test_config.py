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


def test_unknown_option_error_names_known_ones():
    try:
        Config.trian  # noqa: B018
    except AttributeError as e:
        assert "'trian'" in str(e) and "enable_backprop" in str(e)
    else:
        raise AssertionError("expected AttributeError")


def test_repr_lists_options():
    assert "enable_backprop=True" in repr(Config)
