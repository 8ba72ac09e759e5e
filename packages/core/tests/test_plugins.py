"""Plugin loading through fake entry points: broken, duplicate, blocked, strict, versions."""

import sys
import types
from importlib import metadata

import numpy as np
import pytest

import zerograd
import zerograd.backends as B
from zerograd import Variable
from zerograd.backends import Backend, hookimpl
from zerograd_numpy import NumpyBackend


class Box:
    """A toy array type (a list of floats) owned by the fake 'box' backend."""

    def __init__(self, values):
        self.values = list(values)


class BoxBackend(Backend):
    name = "box"

    def owns(self, t):
        return t is Box

    def load_module(self):
        return types.ModuleType("boxmod")

    def to_numpy(self, x):
        return np.asarray(x.values)

    def from_numpy(self, a):
        return Box(a.tolist())


@pytest.fixture(autouse=True)
def _forget_fake_modules():
    """Drop the fake plugin modules a test put in sys.modules: a hostile one (a module
    ``__getattr__`` that exits) would otherwise end later tests that walk sys.modules."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("fake_"):
            del sys.modules[name]


def _module(name, backend_factory=None):
    mod = types.ModuleType(name)
    if backend_factory is not None:
        mod.zerograd_backend = hookimpl(lambda: backend_factory())
    sys.modules[name] = mod
    return mod


@pytest.fixture
def broken_module(tmp_path, monkeypatch):
    """Write a plugin module whose import raises ``error``; return its name."""

    def write(name, error):
        (tmp_path / f"{name}.py").write_text(f"raise {error}\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        sys.modules.pop(name, None)
        return name

    return write


@pytest.fixture
def fake_entry_points(monkeypatch):
    """Replace the installed entry points with the ones a test lists; restore afterwards."""
    installed = []

    class Dist:
        def __init__(self, name):
            self.name = name

    def install(ep_name, module, dist):
        ep = metadata.EntryPoint(ep_name, module, B.ENTRY_POINT_GROUP)
        object.__setattr__(ep, "dist", Dist(dist))
        installed.append(ep)

    def entry_points(group=None, **kw):
        return [ep for ep in installed if ep.group == group]

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    for var in (
        "ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD",
        "ZEROGRAD_BLOCK_PLUGINS",
        "ZEROGRAD_STRICT_PLUGINS",
    ):
        monkeypatch.delenv(var, raising=False)
    yield install
    monkeypatch.undo()
    B.set_strict(False)
    B.refresh()


def _plugin(install, ep_name, backend_factory, dist, module=None):
    """A fake plugin module (``fake_<ep_name>_plugin``) and the entry point that names it."""
    module = module or f"fake_{ep_name}_plugin"
    _module(module, backend_factory)
    install(ep_name, module, dist)


def _numpy_plugin(install=None):
    """The numpy backend as a fake plugin module; with ``install``, also its entry point."""
    if install is None:
        return _module("fake_numpy_plugin", NumpyBackend)
    _plugin(install, "numpy", NumpyBackend, "zerograd-numpy")


def test_two_plugins_load_and_are_listed(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    B.refresh()
    rows = {r.name: r for r in B.list_backends()}
    assert set(rows) == {"numpy", "box"}
    assert rows["box"].distribution == "zerograd-box" and rows["box"].plugin == "box"
    assert B.backend_of(Box([1.0])).name == "box"


def test_broken_plugin_warns_and_others_keep_working(fake_entry_points, broken_module):
    _numpy_plugin()
    broken_module("fake_broken_plugin", "ImportError('libfoo.so not found')")
    fake_entry_points("broken", "fake_broken_plugin", "zerograd-broken")
    fake_entry_points("numpy", "fake_numpy_plugin", "zerograd-numpy")
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"'broken' \(fake_broken_plugin, from zerograd-broken\) failed to import: "
        r"ImportError: libfoo.so not found.*pip uninstall zerograd-broken",
    ):
        names = [r.name for r in B.list_backends()]
    assert names == ["numpy"]
    assert (Variable(np.ones(1)) * 2).data[0] == 2


def test_strict_mode_turns_a_broken_plugin_into_an_error(
    fake_entry_points, monkeypatch, broken_module
):
    broken_module("fake_broken_plugin2", "RuntimeError('boom')")
    fake_entry_points("broken", "fake_broken_plugin2", "zerograd-broken")
    monkeypatch.setenv("ZEROGRAD_STRICT_PLUGINS", "1")
    B.refresh()
    with pytest.raises(B.BackendPluginError, match="failed to import: RuntimeError: boom"):
        B.list_backends()


def test_blocked_plugin_is_not_even_imported(fake_entry_points, monkeypatch):
    _numpy_plugin(fake_entry_points)
    sys.modules.pop("fake_never_imported", None)
    fake_entry_points("evil", "fake_never_imported", "zerograd-evil")
    monkeypatch.setenv("ZEROGRAD_BLOCK_PLUGINS", "evil, other")
    B.refresh()
    assert [r.name for r in B.list_backends()] == ["numpy"]
    assert "fake_never_imported" not in sys.modules


def test_autoload_off_loads_nothing_until_registered(fake_entry_points, monkeypatch):
    _numpy_plugin(fake_entry_points)
    monkeypatch.setenv("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", "1")
    B.refresh()
    assert B.list_backends() == []
    with pytest.raises(
        B.NoBackendError,
        match=r"If none is installed, install the numpy backend from a zerograd checkout: "
        r"pip install \./packages/backend-numpy   \(once published on PyPI: pip install "
        r"zerograd-numpy\)\.$",
    ):
        Variable(np.ones(1))
    B.register(NumpyBackend())
    assert [r.name for r in B.list_backends()] == ["numpy"]


def test_no_backend_installed_says_what_to_install(fake_entry_points):
    B.refresh()
    with pytest.raises(
        B.NoBackendError,
        match=r"^zerograd: no array backend is installed, so there is nothing to compute with\. "
        r"Install the numpy backend from a zerograd checkout: pip install "
        r"\./packages/backend-numpy   \(once published on PyPI: pip install zerograd-numpy\)\.$",
    ):
        B.get_backend()


def test_as_numpy_without_numpy_says_what_to_install(fake_entry_points, monkeypatch):
    # zerograd alone (no backend, no numpy): as_numpy(1.0) was a raw "No module named
    # 'numpy'" from inside zerograd.backends
    B.refresh()
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy now raises ImportError
    with pytest.raises(
        ModuleNotFoundError,
        match=r"^zerograd\.backends\.as_numpy makes numpy arrays, and numpy is not installed; "
        r"the numpy backend brings it: install it from a zerograd checkout: pip install "
        r"\./packages/backend-numpy   \(once published on PyPI: pip install zerograd-numpy\)\.$",
    ):
        B.as_numpy(1.0)


def test_duplicate_entry_point_name_warns_and_keeps_first(fake_entry_points):
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    _plugin(fake_entry_points, "box", BoxBackend, "box-fork", module="fake_box_plugin_fork")
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"same name as the one from zerograd-box.*pip uninstall box-fork",
    ):
        rows = B.list_backends()
    assert [(r.name, r.distribution) for r in rows] == [("box", "zerograd-box")]


def test_two_backends_claiming_one_array_type(fake_entry_points):
    class OtherNumpy(NumpyBackend):
        name = "numpy2"

    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "numpy2", OtherNumpy, "numpy2")
    B.refresh()
    with pytest.raises(
        B.BackendPluginError,
        match=r"numpy.ndarray are claimed by several backends: 'numpy' \(plugin 'numpy', "
        r"from zerograd-numpy\), 'numpy2' \(plugin 'numpy2', from numpy2\)\. Keep one of "
        r"them: pip uninstall numpy2 \(or keep it installed but unused: "
        r"ZEROGRAD_BLOCK_PLUGINS=numpy2\)",
    ):
        Variable(np.ones(1))


def test_plugin_for_another_api_version_is_refused(fake_entry_points):
    class Future(BoxBackend):
        api_version = 2

    _plugin(fake_entry_points, "future", Future, "zerograd-future")
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"written for backend API version 2, but "
        r"this zerograd speaks version 1",
    ):
        assert B.list_backends() == []


def test_a_backend_on_a_device_that_is_neither_cpu_nor_gpu_is_refused(fake_entry_points):
    """The guide says 'cpu' or 'gpu' (to_cpu() and to_gpu() pick backends by it): 'tpu' was
    listed without a word, and neither of them ever picked it."""

    class Tpu(BoxBackend):
        device = "tpu"

    _plugin(fake_entry_points, "tpu", Tpu, "zerograd-tpu")
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning, match=r"whose device is 'tpu'; a backend's device is 'cpu' or 'gpu'"
    ):
        assert B.list_backends() == []
    with pytest.raises(B.NoBackendError, match="is installed but could not be loaded: .*'tpu'"):
        B.get_backend(Tpu.name)


def test_a_device_property_is_not_read_when_the_plugin_registers(fake_entry_points):
    """A lazy device (the JAX example asks JAX for its default device) must not load the
    array library at registration: only a plain value is checked there."""
    reads = []

    class Lazy(BoxBackend):
        @property
        def device(self):
            reads.append(1)
            return "cpu"

    _plugin(fake_entry_points, "lazy", Lazy, "zerograd-lazy")
    B.refresh()
    backend = B.get_backend("box")  # the plugin loads and registers here
    assert reads == []
    assert backend.device == "cpu" and reads == [1]


def test_plugin_with_unknown_hook_is_refused(fake_entry_points):
    mod = _module("fake_oldhook_plugin")
    mod.zerograd_array_module = hookimpl(lambda: None)  # a hook this zerograd does not know
    fake_entry_points("old", "fake_oldhook_plugin", "zerograd-old")
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"does not fit this zerograd's hook "
        r"specification",
    ):
        assert B.list_backends() == []


def test_plugin_returning_wrong_object_and_raising_hook(fake_entry_points):
    _plugin(fake_entry_points, "wrong", lambda: object(), "w")
    _plugin(fake_entry_points, "raising", lambda: 1 / 0, "r")
    B.refresh()
    with pytest.warns(B.BackendPluginWarning) as record:
        assert B.list_backends() == []
    text = " | ".join(str(w.message) for w in record)
    assert "returned object, not a zerograd.backends.Backend" in text
    assert "raised in zerograd_backend(): ZeroDivisionError" in text


def test_mixing_backends_in_one_op(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    B.refresh()
    with pytest.raises(
        B.BackendMismatchError,
        match=r"Add: inputs live on different backends "
        r"\(numpy, box",
    ):
        Variable(np.ones(1)) + Variable(Box([1.0]))


def test_a_raw_array_of_another_backend_is_a_mismatch_on_first_sight(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    B.refresh()  # no array type is known yet: Box is met first as a raw operand
    x = Variable(np.ones(2))
    box = Box([1.0, 2.0])
    for op, name in ((lambda: x * box, "Mul"), (lambda: x + box, "Add")):
        with pytest.raises(
            B.BackendMismatchError,
            match=rf"^{name}: inputs live on different backends \(numpy, box; types "
            rf"numpy\.ndarray, test_plugins\.Box\)\. Move them to one first: a Variable with "
            rf"x\.to\('numpy'\) \(or x\.to_cpu\(\), x\.to_gpu\(\)\), a raw array with "
            rf"zerograd\.backends\.as_array_of\(a, 'numpy'\)\.$",
        ):
            op()
        B.refresh()  # forget Box's type again
    assert x.creator is None and x.grad is None and x.data.tolist() == [1.0, 1.0]


def test_index_array_of_another_backend_is_named(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    B.refresh()
    ids = Box([0.0, 2.0])
    ids.shape, ids.dtype = (2,), np.dtype("int64")  # looks like an array to the check
    x = Variable(np.arange(6.0).reshape(3, 2))
    with pytest.raises(
        B.BackendMismatchError,
        match=r"get_item: the index array lives on backend 'box' and the indexed array "
        r"\(shape \(3, 2\)\) on 'numpy'. Put both on one backend",
    ):
        x[ids]
    assert x.creator is None and x.grad is None


def test_unsupported_type_names_installed_backends():
    with pytest.raises(
        TypeError,
        match=r"builtins.dict is not an array of any installed "
        r"backend \((.*, )?numpy(, .*)?\)",
    ):
        B.backend_of({})


def test_gpu_errors_without_gpu_backend(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    B.refresh()
    x = Variable(np.ones(2))
    with pytest.raises(
        B.NoBackendError,
        match=r"no GPU backend is installed, so nothing can move to a GPU\. Install one \(it "
        r"needs an NVIDIA GPU\) from a zerograd checkout: pip install "
        r"'\./packages/backend-cupy\[cuda12\]'   \(once published on PyPI: pip install "
        r"'zerograd-cupy\[cuda12\]'\)\.$",
    ):
        x.to_gpu()
    assert isinstance(x.data, np.ndarray)
    assert B.gpu_enable is False


def test_dispatch_is_cached_per_type_without_hook_calls(fake_entry_points):
    import zerograd.functions as F

    _numpy_plugin(fake_entry_points)
    B.refresh()
    rng = np.random.default_rng(0)
    x, t = rng.normal(size=(16, 3)), rng.normal(size=(16, 1))
    W1, W2 = Variable(rng.normal(size=(3, 8)) * 0.5), Variable(rng.normal(size=(8, 1)) * 0.5)

    def loss():
        return F.sum((F.matmul(F.tanh(F.matmul(x, W1)), W2) - t) ** 2) / 16

    loss()  # the first use loads the plugins (hook calls happen here, and only here)
    calls = []
    B.registry.pm.add_hookcall_monitoring(lambda *a: calls.append(a), lambda *a: None)
    losses = []
    for _ in range(20):  # training steps: forward, backward, update, conversions
        y = loss()
        y.backward()
        for W in (W1, W2):
            W.data = W.data - 0.1 * B.get_array_module(W).asarray(W.grad.data)
            W.cleargrad()
        losses.append(float(B.as_numpy(y)))
    assert calls == []
    assert losses[-1] < losses[0]
    assert B.registry.by_type[np.ndarray].name == "numpy"


def test_strict_error_leaves_nothing_half_loaded(fake_entry_points, monkeypatch, broken_module):
    _numpy_plugin(fake_entry_points)
    broken_module("fake_broken_plugin3", "ImportError('libbar missing')")
    fake_entry_points("broken", "fake_broken_plugin3", "zerograd-broken")
    monkeypatch.setenv("ZEROGRAD_STRICT_PLUGINS", "1")
    B.refresh()
    for _ in range(2):  # the second call reports the same plugin, not a bogus duplicate
        with pytest.raises(B.BackendPluginError, match="'broken' .*libbar missing"):
            B.list_backends()


def test_strict_from_the_environment_ends_with_it(fake_entry_points, monkeypatch, broken_module):
    broken_module("fake_broken_plugin4", "ImportError('libbaz missing')")
    fake_entry_points("broken", "fake_broken_plugin4", "zerograd-broken")
    monkeypatch.setenv("ZEROGRAD_STRICT_PLUGINS", "1")
    B.refresh()
    with pytest.raises(B.BackendPluginError):
        B.list_backends()
    monkeypatch.delenv("ZEROGRAD_STRICT_PLUGINS")
    B.refresh()
    with pytest.warns(B.BackendPluginWarning, match="libbaz missing"):
        assert B.list_backends() == []


def test_missing_backend_says_blocked_or_autoload_off(fake_entry_points, monkeypatch):
    _numpy_plugin(fake_entry_points)
    monkeypatch.setenv("ZEROGRAD_BLOCK_PLUGINS", "numpy")
    B.refresh()
    with pytest.raises(B.NoBackendError, match=r"blocked by ZEROGRAD_BLOCK_PLUGINS=numpy; remove"):
        B.get_backend("numpy")
    monkeypatch.delenv("ZEROGRAD_BLOCK_PLUGINS")
    monkeypatch.setenv("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", "1")
    B.refresh()
    with pytest.raises(B.NoBackendError, match=r"autoloading is switched off .*register"):
        B.get_backend("numpy")
    with pytest.raises(B.NoBackendError, match=r"autoloading is switched off"):
        Variable(np.ones(1))


def test_module_registered_by_hand_is_labelled(fake_entry_points):
    B.refresh()
    B.register(_module("fake_box_plugin2", BoxBackend), name="box")
    assert [(r.name, r.distribution) for r in B.list_backends()] == [("box", "registered by hand")]


# -- plugins that exit, raise, or take a name that is not theirs (issue 11 item 8) ------


def _exiting_module(broken_module, name):
    return broken_module(name, "SystemExit(3)")


def test_plugin_whose_import_calls_sys_exit_is_skipped(fake_entry_points, broken_module):
    _numpy_plugin(fake_entry_points)
    fake_entry_points("quits", _exiting_module(broken_module, "fake_exit_plugin"), "quitter")
    B.refresh()
    with pytest.warns(B.BackendPluginWarning) as record:
        x = Variable(np.ones(2))  # the program goes on
    assert [str(w.message) for w in record] == [
        "zerograd: backend plugin 'quits' (fake_exit_plugin, from quitter) failed to import: "
        "SystemExit (it called sys.exit(3)). It was skipped and the other backends still "
        "work. Reinstall or fix it, or remove it: pip uninstall quitter (or keep it installed "
        "but unused: ZEROGRAD_BLOCK_PLUGINS=quitter)."
    ]
    assert (x * 2).data.tolist() == [2.0, 2.0]
    assert [r.name for r in B.list_backends()] == ["numpy"]
    # Ctrl-C during loading is the user's, not the plugin's: it goes through
    fake_entry_points("ctrlc", broken_module("fake_ctrlc_plugin", "KeyboardInterrupt"), "c")
    B.refresh()
    with pytest.warns(B.BackendPluginWarning, match="quitter"), pytest.raises(KeyboardInterrupt):
        B.list_backends()
    assert B.registry.backends == {}  # nothing half loaded


def test_plugin_whose_hook_calls_sys_exit_is_skipped(fake_entry_points):
    def leave():
        sys.exit("bye")

    _plugin(fake_entry_points, "quits", leave, "quitter")
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"plugin 'quits' \(from quitter\) raised in zerograd_backend\(\): SystemExit "
        r"\(it called sys.exit\('bye'\)\)\. It was skipped; the other backends still work\. "
        r"Fix or remove it: pip uninstall quitter",
    ):
        assert [r.name for r in B.list_backends()] == ["box", "numpy"]
    assert not B.registry.pm.has_plugin("quits")


def test_strict_mode_makes_an_exiting_plugin_an_error(fake_entry_points, broken_module):
    _numpy_plugin(fake_entry_points)
    fake_entry_points("quits", _exiting_module(broken_module, "fake_exit_plugin2"), "quitter")
    B.set_strict()
    B.refresh()
    for _ in range(2):  # all or nothing: the second try fails the same way
        with pytest.raises(B.BackendPluginError, match=r"'quits' .*SystemExit"):
            Variable(np.ones(1))
    assert B.registry.backends == {}


def test_third_party_plugin_cannot_take_the_numpy_name(fake_entry_points):
    # listed first, as if its distribution came earlier on sys.path
    sys.modules.pop("fake_fork_plugin", None)
    fake_entry_points("numpy", "fake_fork_plugin", "numpy-fork")
    _numpy_plugin(fake_entry_points)
    B.refresh()
    with pytest.warns(B.BackendPluginWarning) as record:
        rows = B.list_backends()
    assert [(r.name, r.plugin, r.distribution) for r in rows] == [
        ("numpy", "numpy", "zerograd-numpy")
    ]
    [message] = [str(w.message) for w in record]
    assert message == (
        "zerograd: backend plugin 'numpy' (fake_fork_plugin, from numpy-fork) claims the name "
        "'numpy', which belongs to zerograd's own backend from zerograd-numpy; it was skipped "
        "and 'numpy' stays zerograd-numpy's. If you do not need numpy-fork, remove it: "
        "pip uninstall numpy-fork (or keep it installed but unused: "
        "ZEROGRAD_BLOCK_PLUGINS=numpy-fork)."
    )
    assert "fake_fork_plugin" not in sys.modules  # an intruder is not even imported


def test_third_party_backend_named_numpy_is_refused_even_alone(fake_entry_points):
    class Impostor(BoxBackend):
        name = "numpy"

    _plugin(fake_entry_points, "fastnp", Impostor, "fastnp-dist")
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"plugin 'fastnp' \(from fastnp-dist\) claims the name 'numpy', which belongs "
        r"to zerograd's own backend from zerograd-numpy.*pip uninstall fastnp-dist",
    ) as record:
        assert B.list_backends() == []
    assert all("ZEROGRAD_BLOCK_PLUGINS=numpy" not in str(w.message) for w in record)
    # the real one, its distribution spelled as pip allows, keeps the name
    _plugin(fake_entry_points, "numpy", NumpyBackend, "Zerograd_Numpy")
    B.refresh()
    with pytest.warns(B.BackendPluginWarning, match="fastnp-dist"):
        rows = B.list_backends()
    assert [(r.name, r.distribution) for r in rows] == [("numpy", "Zerograd_Numpy")]


def test_blocking_a_distribution_leaves_the_real_backend(fake_entry_points, monkeypatch):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    monkeypatch.setenv("ZEROGRAD_BLOCK_PLUGINS", "Zerograd_Box")
    B.refresh()
    assert [r.name for r in B.list_backends()] == ["numpy"]


# -- pluggy as designed (issue 12) ------------------------------------------------------


class CircleBackend(BoxBackend):
    name = "circle"

    def owns(self, t):
        return False


def test_a_plugin_may_provide_several_backends(fake_entry_points):
    _plugin(fake_entry_points, "shapes", lambda: [BoxBackend(), CircleBackend()], "shapes")
    B.refresh()
    rows = [(r.name, r.plugin, r.distribution) for r in B.list_backends()]
    assert rows == [("box", "shapes", "shapes"), ("circle", "shapes", "shapes")]


def test_a_plugin_returning_none_provides_nothing_quietly(fake_entry_points):
    import warnings

    _plugin(fake_entry_points, "nothing", lambda: None, "nothing-here")
    _numpy_plugin(fake_entry_points)
    B.refresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r.name for r in B.list_backends()] == ["numpy"]


def test_hooks_are_called_through_pluggy_once_per_plugin(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    B.refresh()
    calls = []
    B.registry.pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: calls.append((name, [i.plugin_name for i in impls])),
        lambda *a: None,
    )
    Variable(np.ones(1))  # loads the plugins
    assert calls == [("zerograd_backend", ["numpy"]), ("zerograd_backend", ["box"])]


def test_a_raising_hook_does_not_hide_the_plugins_around_it(fake_entry_points):
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    _plugin(fake_entry_points, "raising", lambda: 1 / 0, "r")
    _numpy_plugin(fake_entry_points)
    B.refresh()
    with pytest.warns(B.BackendPluginWarning, match=r"'raising' \(from r\) raised"):
        assert [r.name for r in B.list_backends()] == ["box", "numpy"]
    # pm.hook over the plugins that stay gives exactly the loaded backends
    names = sorted(b.name for b in B.registry.pm.hook.zerograd_backend())
    assert names == ["box", "numpy"]


def test_owns_that_raises_is_reported_and_ignored(fake_entry_points):
    class Grumpy(BoxBackend):
        name = "grumpy"

        def owns(self, t):
            raise SystemExit("no")

    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "grumpy", Grumpy, "grumpy-dist")
    B.refresh()
    with pytest.warns(B.BackendPluginWarning, match=r"'grumpy' .*raised in owns\(.*SystemExit"):
        assert (Variable(np.ones(1)) * 3).data.tolist() == [3.0]


def test_registering_by_hand_under_a_taken_name_says_so(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"'numpy' was not registered: a plugin named 'numpy' \(from zerograd-numpy\) "
        r"is already loaded\. Use another name\.",
    ):
        B.register(_module("fake_box_plugin3", BoxBackend), name="numpy")
    assert [(r.name, r.distribution) for r in B.list_backends()] == [("numpy", "zerograd-numpy")]


# -- the backends API with wrong inputs: each right or one clear error ------------------


def test_wrapper_types_come_through_an_explicit_seam():
    class Holder:  # not a Variable: any class can declare that it wraps an array
        def __init__(self, data):
            self.data = data

    h = Holder(np.arange(3.0))
    with pytest.raises(TypeError, match="is not an array of any installed backend"):
        B.backend_of(h)
    assert not B.is_array_wrapper(h) and B.is_array_wrapper(Variable(np.ones(1)))
    B.register_array_wrapper(Holder)
    assert B.is_array_wrapper(h)
    B.register_array_wrapper(Holder)  # twice changes nothing
    assert B.backend_of(h).name == "numpy"
    assert B.get_array_module(h) is B.get_backend("numpy").xp  # numpy itself on numpy 2
    assert B.as_numpy(h) is h.data
    with pytest.raises(TypeError, match=r"register_array_wrapper: expected a class .*got str"):
        B.register_array_wrapper("Variable")
    assert B.backend_of(Variable(np.ones(1))).name == "numpy"  # zerograd's own registration


def test_as_numpy_gives_arrays_or_one_clear_error():
    assert type(B.as_numpy(np.float64(2.5))) is np.ndarray and B.as_numpy(np.float64(2.5)) == 2.5
    assert B.as_numpy([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert B.as_numpy(Variable(np.ones(2))).tolist() == [1.0, 1.0]
    for bad, words in ((None, r"NoneType \(None\)"), ({}, r"dict \(\{\}\)")):
        with pytest.raises(TypeError, match=rf"as_numpy: {words} is not an array, a Variable"):
            B.as_numpy(bad)
    with pytest.raises(TypeError, match=r"as_numpy: cannot make an array of list .*inhomogeneous"):
        B.as_numpy([1.0, [2.0, 3.0]])


def test_as_array_of_refuses_a_bad_backend_or_non_numbers():
    with pytest.raises(TypeError, match=r"as_array_of\(x, backend\): backend must be .*got int"):
        B.as_array_of(np.ones(2), 3)
    with pytest.raises(TypeError, match=r"as_array_of: NoneType \(None\) is not an array"):
        B.as_array_of(None, "numpy")
    assert B.as_array_of([1.5, 2.5], "numpy").tolist() == [1.5, 2.5]


def test_get_backend_names_what_it_accepts(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    B.refresh()
    with pytest.raises(
        TypeError,
        match=r"get_backend\(x\): x must be a backend name .*got bytes \(b'numpy'\)\. "
        r"Installed: .*numpy",
    ):
        B.get_backend(b"numpy")
    with pytest.raises(B.NoBackendError, match=r"no backend named '' .*Install the distribution"):
        B.get_backend("")
    with pytest.raises(B.NoBackendError) as info:  # as model.to("cupy") says it
        B.get_backend("cupy")
    assert str(info.value) == (  # zerograd-cupy alone brings no CuPy: the extra does
        "zerograd: no backend named 'cupy' is installed; installed: ['numpy']. Install it "
        "from a zerograd checkout: pip install './packages/backend-cupy[cuda12]'   (once "
        "published on PyPI: pip install 'zerograd-cupy[cuda12]')."
    )  # and no "Did you mean 'numpy'?": zerograd's own name is no misspelling


def test_register_and_set_strict_refuse_what_they_cannot_use():
    before = B.list_backends()
    with pytest.raises(TypeError, match=r"register: expected .*got int \(42\)\.$"):
        B.register(42)
    with pytest.raises(TypeError, match=r"got str \('numpy'\)\. .*call get_backend\('numpy'\)"):
        B.register("numpy")
    with pytest.raises(TypeError, match=r"register: name must be a non-empty str or None, got 3"):
        B.register(BoxBackend(), name=3)
    for bad in ("no", 1, None):
        with pytest.raises(TypeError) as info:
            B.set_strict(bad)
        assert str(info.value) == f"set_strict: strict must be True or False, got {bad!r}"
    assert B.list_backends() == before and B.registry.strict is False


def test_set_strict_takes_numpys_bools():
    """np.True_ (numpy's bool, as ``(a > 0).all()`` gives) was refused as not a bool."""
    was = B.registry.strict
    try:
        B.set_strict(np.True_)
        assert B.registry.strict is True
        B.set_strict(np.False_)
        assert B.registry.strict is False
    finally:
        B.set_strict(was)


def test_a_hook_function_without_the_marker_is_reported(fake_entry_points):
    mod = _module("fake_unmarked_plugin")
    mod.zerograd_backend = lambda: BoxBackend()  # forgot @hookimpl
    fake_entry_points("unmarked", "fake_unmarked_plugin", "zerograd-unmarked")
    _numpy_plugin(fake_entry_points)
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"'unmarked' \(from zerograd-unmarked\) has a zerograd_backend function that is "
        r"not marked with @zerograd.backends.hookimpl.*pip uninstall zerograd-unmarked",
    ):
        assert [r.name for r in B.list_backends()] == ["numpy"]


def test_a_plugin_that_exits_while_being_inspected_is_skipped(fake_entry_points):
    mod = _module("fake_getattr_plugin", BoxBackend)
    # pluggy lists a plugin's names with dir() (every version; before 1.7 it also ran getattr
    # on each): a plugin whose listing ends the program must only be reported.
    mod.__dir__ = lambda: sys.exit(4)
    fake_entry_points("trap", "fake_getattr_plugin", "zerograd-trap")
    _numpy_plugin(fake_entry_points)
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"'trap' \(from zerograd-trap\) raised while pluggy registered it: SystemExit "
        r"\(it called sys.exit\(4\)\)",
    ):
        assert [r.name for r in B.list_backends()] == ["numpy"]
    assert not B.registry.pm.has_plugin("trap")


class CrashingGpuBackend(NumpyBackend):
    """A GPU plugin whose availability check fails (a driver too old for its toolkit)."""

    name = "fakegpu"
    device = "gpu"

    def owns(self, t):
        return False

    def is_available(self):
        raise RuntimeError("CUDA driver version is insufficient for CUDA runtime version")


class WorkingGpuBackend(CrashingGpuBackend):
    name = "goodgpu"

    def is_available(self):
        return True


CRASH_MESSAGE = (
    r"zerograd: backend 'fakegpu' \(plugin 'fakegpu', from zerograd-fakegpu\) failed to say "
    r"whether it can run on this machine: its is_available\(\) raised RuntimeError: CUDA driver "
    r"version is insufficient for CUDA runtime version\. Reinstall or fix it \(a GPU plugin may "
    r"need its driver or toolkit\), or remove it: pip uninstall zerograd-fakegpu \(or keep it "
    r"installed but unused: ZEROGRAD_BLOCK_PLUGINS=zerograd-fakegpu\)\."
)


def test_a_gpu_plugin_whose_check_raises_is_named_with_what_to_do(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "fakegpu", CrashingGpuBackend, "zerograd-fakegpu")
    B.refresh()
    x = Variable(np.array([1.0, 2.0]))
    for move in (x.to_gpu, lambda: x.to("fakegpu"), B.gpu_backend):
        with pytest.raises(B.BackendPluginError, match="^" + CRASH_MESSAGE + "$") as info:
            move()
        assert isinstance(info.value.__cause__, RuntimeError)
    assert type(x.data) is np.ndarray and x.data.tolist() == [1.0, 2.0]
    with pytest.warns(B.BackendPluginWarning, match=CRASH_MESSAGE):
        assert B.gpu_enable is False
    with pytest.warns(B.BackendPluginWarning, match=CRASH_MESSAGE):
        zerograd.seed(0)  # the other backends are still seeded
    assert [r.available for r in B.list_backends()] == [False, True]


def test_a_broken_gpu_plugin_does_not_hide_a_working_one(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "fakegpu", CrashingGpuBackend, "zerograd-fakegpu")
    _plugin(fake_entry_points, "goodgpu", WorkingGpuBackend, "zerograd-goodgpu")
    B.refresh()
    with pytest.warns(B.BackendPluginWarning, match=CRASH_MESSAGE):
        assert B.gpu_backend().name == "goodgpu"
    B.set_strict(True)
    with pytest.raises(B.BackendPluginError, match=CRASH_MESSAGE):
        zerograd.seed(0)


# -- a plugin author's mistakes, met through the API a user calls ------------------------


@pytest.mark.parametrize(
    "why, make",
    [
        ("failed to import: ModuleNotFoundError: No module named 'libmylib'", None),
        (
            "raised in zerograd_backend\\(\\): ImportError: no GPU",
            lambda: _raise(ImportError("no GPU")),
        ),
        ("returned the class BoxBackend instead of an instance", lambda: BoxBackend),
    ],
)
def test_asking_by_name_for_a_plugin_that_failed_says_why(
    fake_entry_points, broken_module, why, make
):
    _numpy_plugin(fake_entry_points)
    if make is None:
        broken_module("fake_mylib_plugin", "ModuleNotFoundError(\"No module named 'libmylib'\")")
        fake_entry_points("mylib", "fake_mylib_plugin", "zerograd-mylib")
    else:
        _plugin(fake_entry_points, "mylib", make, "zerograd-mylib")
    B.refresh()
    with pytest.warns(B.BackendPluginWarning, match=why):
        assert [r.name for r in B.list_backends()] == ["numpy"]
    for ask in (lambda: B.get_backend("mylib"), lambda: Variable(np.ones(1)).to("mylib")):
        with pytest.raises(B.NoBackendError) as info:
            ask()
        text = str(info.value)
        assert text.startswith(
            "zerograd: backend 'mylib' is installed but could not be loaded: backend plugin "
            "'mylib' ("
        ), text
        assert "from zerograd-mylib" in text and "pip uninstall zerograd-mylib" in text
        assert why.replace("\\", "") in text and "Install the distribution" not in text
    assert (Variable(np.ones(1)) * 2).data.tolist() == [2.0]  # the others still work


def _raise(exc):
    raise exc


def test_asking_by_name_for_a_plugin_that_provided_nothing_says_so(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "mylib", lambda: None, "zerograd-mylib")
    B.refresh()
    with pytest.raises(
        B.NoBackendError,
        match=r"^zerograd: backend 'mylib' is installed but provides nothing on this machine: "
        r"its plugin 'mylib' \(from zerograd-mylib\) answered zerograd_backend\(\) with None\.",
    ):
        B.get_backend("mylib")


def test_a_plugin_refused_by_hand_can_be_fixed_and_registered_again(fake_entry_points):
    import warnings

    _numpy_plugin(fake_entry_points)
    B.refresh()
    mod = _module("fake_retry_plugin", lambda: BoxBackend)  # the class, not an instance
    with pytest.warns(B.BackendPluginWarning, match="the class BoxBackend instead of an"):
        B.register(mod)
    assert B.registry.plugins == {"numpy": "zerograd-numpy"}  # nothing of it kept
    assert not B.registry.pm.is_registered(mod)
    mod.zerograd_backend = hookimpl(lambda: BoxBackend())  # fixed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        B.register(mod)
    assert B.backend_of(Box([1.0])).name == "box"


def test_registering_an_already_loaded_plugin_again_changes_nothing(fake_entry_points):
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    B.refresh()
    box = B.get_backend("box")
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"^zerograd: backend plugin <module 'fake_box_plugin'> is already loaded as 'box' "
        r"\(from zerograd-box\); nothing was changed\. Drop this zerograd\.backends\.register\(\) "
        r"call: an installed plugin is found through its entry point\.$",
    ):
        B.register(sys.modules["fake_box_plugin"])
    assert B.get_backend("box") is box
    assert [(r.name, r.distribution) for r in B.list_backends()] == [("box", "zerograd-box")]


def test_a_strict_refusal_by_hand_keeps_nothing_of_the_plugin(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    B.refresh()
    before = B.list_backends()
    B.set_strict()
    mod = _module("fake_half_plugin", lambda: [BoxBackend(), "not a backend"])
    with pytest.raises(B.BackendPluginError, match=r"returned str, not a zerograd.backends"):
        B.register(mod)
    assert B.list_backends() == before and not B.registry.pm.is_registered(mod)
    with pytest.raises(TypeError, match="is not an array of any installed backend"):
        B.backend_of(Box([1.0]))


def test_a_backend_claiming_a_type_in_use_is_refused_and_the_owner_keeps_working(
    fake_entry_points,
):
    class OtherNumpy(NumpyBackend):
        name = "numpy2"

    _numpy_plugin(fake_entry_points)
    B.refresh()
    x = Variable(np.ones(2))  # numpy arrays are in use
    B.register(BoxBackend())  # another backend joining keeps what is known of them
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"^zerograd: backend 'numpy2' \(plugin 'numpy2', registered by hand\) claims "
        r"arrays of type numpy\.ndarray, which backend 'numpy' \(plugin 'numpy', from "
        r"zerograd-numpy\) owns; it was skipped\. An array type belongs to one backend: make "
        r"owns\(\) answer False for it\.",
    ):
        B.register(OtherNumpy())
    assert [r.name for r in B.list_backends()] == ["box", "numpy"]
    assert (x * 2).data.tolist() == [2.0, 2.0]
    assert B.backend_of(np.ones(1)) is B.get_backend("numpy")


def test_a_backend_for_a_numpy_subclass_is_told_why_it_cannot_own_it(fake_entry_points):
    class Sub(np.ndarray):
        pass

    class SubBackend(NumpyBackend):
        name = "sub"

        def owns(self, t):
            return issubclass(t, Sub)

    _numpy_plugin(fake_entry_points)
    B.refresh()
    B.register(SubBackend())
    with pytest.raises(
        B.BackendPluginError,
        match=r"claimed by several backends: 'numpy' .*, 'sub' \(plugin 'sub', registered by "
        r"hand\)\. The numpy backend owns numpy\.ndarray and every subclass of it, so a "
        r"backend's arrays cannot subclass numpy\.ndarray: give them a type of their own \(one "
        r"that holds the ndarray in an attribute\)\.$",
    ):
        B.backend_of(np.ones(2).view(Sub))
    assert (Variable(np.ones(1)) * 2).data.tolist() == [2.0]


def test_a_misspelled_hook_is_named_with_the_hook_meant(fake_entry_points):
    mod = _module("fake_typo_plugin")
    mod.zerograd_backends = hookimpl(lambda: BoxBackend())  # one letter too many
    fake_entry_points("typo", "fake_typo_plugin", "zerograd-typo")
    _numpy_plugin(fake_entry_points)
    B.refresh()
    with pytest.warns(
        B.BackendPluginWarning,
        match=r"'typo' \(from zerograd-typo\) does not fit .*unknown hook 'zerograd_backends'.* "
        r"zerograd's hooks are zerograd_backend; did you mean zerograd_backend for "
        r"zerograd_backends\? It was skipped",
    ):
        assert [r.name for r in B.list_backends()] == ["numpy"]


@pytest.mark.parametrize("block", ["zerograd-box", "Zerograd_Box", "numpy,zerograd-box"])
def test_a_plugin_blocked_by_its_distribution_is_said_blocked(
    fake_entry_points, monkeypatch, block
):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "box", BoxBackend, "zerograd-box")
    monkeypatch.setenv("ZEROGRAD_BLOCK_PLUGINS", block)
    B.refresh()
    entry = block.split(",")[-1]
    with pytest.raises(
        B.NoBackendError,
        match=rf"^zerograd: no backend named 'box' is loaded: its plugin 'box' \(from "
        rf"zerograd-box\) is blocked by ZEROGRAD_BLOCK_PLUGINS={block}; remove '{entry}' from "
        rf"that list\.$",
    ):
        B.get_backend("box")


def test_a_misspelled_backend_name_suggests_the_installed_one(fake_entry_points):
    _numpy_plugin(fake_entry_points)
    _plugin(fake_entry_points, "mylib", lambda: type("M", (BoxBackend,), {"name": "mylib"})(), "d")
    B.refresh()
    with pytest.raises(
        B.NoBackendError,
        match=r"^zerograd: no backend named 'mylbi' is installed; installed: \['mylib', "
        r"'numpy'\]\. Did you mean 'mylib'\? ",
    ):
        Variable(np.ones(1)).to("mylbi")


def test_registering_by_hand_while_another_thread_meets_a_new_array_type(fake_entry_points):
    # a backend registered by hand is asked about every array type in use; the types were
    # read from the table that another thread's first use of a new type adds to, and the
    # registration failed with "dictionary changed size during iteration"
    import threading

    _numpy_plugin(fake_entry_points)
    B.refresh()
    B.backend_of(np.ones(1))  # numpy.ndarray is in use
    asked, added = threading.Event(), threading.Event()

    class Asks(BoxBackend):
        def owns(self, t):
            if not asked.is_set():
                asked.set()
                assert added.wait(30)
            return t is Box

    class Sub(np.ndarray):  # a type met for the first time, in the other thread
        pass

    def other():
        assert asked.wait(30)
        try:
            assert B.backend_of(np.ones(2).view(Sub)).name == "numpy"
        finally:
            added.set()

    helper = threading.Thread(target=other)
    helper.start()
    try:
        B.register(Asks(), name="asks")
    finally:
        added.set()
        helper.join(30)
    assert {r.name for r in B.list_backends()} == {"numpy", "box"}
    assert B.backend_of(Box([1.0])).name == "box"


def test_a_new_array_type_met_while_another_thread_registers_a_backend(fake_entry_points):
    # the first use of an array type asks every backend whether it owns it; the backends
    # were read from the table that a registration in another thread adds to
    import threading

    _numpy_plugin(fake_entry_points)
    B.refresh()
    asked, registered = threading.Event(), threading.Event()

    class Pending:  # an array type no backend has been asked about
        pass

    class Asks(BoxBackend):
        def owns(self, t):
            if t is Pending and not asked.is_set():
                asked.set()
                assert registered.wait(30)
            return t is Box

    class Other(BoxBackend):
        name = "other"

        def owns(self, t):
            return False

    B.register(Asks(), name="asks")

    def other():
        assert asked.wait(30)
        try:
            B.register(Other(), name="other")
        finally:
            registered.set()

    helper = threading.Thread(target=other)
    helper.start()
    try:
        with pytest.raises(TypeError, match="is not an array of any installed backend"):
            B.backend_of(Pending())
    finally:
        registered.set()
        helper.join(30)
    assert {r.name for r in B.list_backends()} == {"numpy", "box", "other"}
