"""Plugin failures a user meets, with this example plugin installed for real.

Extra distributions are installed the way pip lays them out: a ``*.dist-info`` folder
(METADATA and entry_points.txt) and the module, in a folder put on ``sys.path``.
importlib.metadata then finds them exactly as it finds pip-installed ones.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import zerograd
from zerograd.backends import (
    BackendPluginError,
    BackendPluginWarning,
    NoBackendError,
    get_backend,
    list_backends,
    refresh,
    register,
    set_strict,
)

BROKEN = "raise ImportError('needs libfoo, which is not installed')\n"
EXITS = "import sys\nsys.exit(1)\n"


def install(root: Path, dist: str, entry_points: dict[str, str], modules=None) -> None:
    """Write an installed distribution ``dist`` with ``zerograd.backends`` entry points."""
    info = root / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text("[zerograd.backends]\n" + lines)
    for module, source in (modules or {}).items():
        (root / f"{module}.py").write_text(source)


def install_broken(root: Path) -> None:
    """A distribution ``zerograd-broken`` whose plugin module raises on import."""
    install(
        root,
        "zerograd-broken",
        {"broken": "zerograd_broken_plugin"},
        {"zerograd_broken_plugin": BROKEN},
    )


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path (ahead of site-packages) to install extra distributions into."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _names() -> list[str]:
    return [row.name for row in list_backends()]


def test_listing_shows_every_installed_backend_with_its_version():
    import array_api_strict

    rows = {row.name: row for row in list_backends()}
    assert {"arrayapi", "numpy"} <= set(rows)  # (and any other backend installed here)
    assert rows["arrayapi"].distribution == "zerograd-arrayapi-example"
    assert rows["arrayapi"].version == array_api_strict.__version__
    assert rows["numpy"].version == np.__version__
    assert all(rows[n].available and rows[n].device == "cpu" for n in ("arrayapi", "numpy"))
    assert all(row.version not in ("", "-") or not row.available for row in rows.values())


def test_installed_twice_under_one_name_warns_and_keeps_one(site):
    install(site, "zerograd-arrayapi-fork", {"arrayapi": "zerograd_arrayapi"})
    with pytest.warns(BackendPluginWarning) as caught:
        rows = {row.name: row for row in list_backends()}
    message = str(caught[0].message)
    assert message == (
        "zerograd: backend plugin 'arrayapi' (zerograd_arrayapi, from "
        "zerograd-arrayapi-example) has the same name as the one from zerograd-arrayapi-fork; "
        "it was skipped. Uninstall one of the two distributions: "
        "pip uninstall zerograd-arrayapi-example (or keep it installed but unused: "
        "ZEROGRAD_BLOCK_PLUGINS=zerograd-arrayapi-example)."
    )
    assert len(caught) == 1
    # the first one found on sys.path wins; the other backends are untouched
    assert rows["arrayapi"].distribution == "zerograd-arrayapi-fork"
    assert rows["numpy"].distribution == "zerograd-numpy"


def test_same_distribution_in_two_places_is_seen_once(site):
    # e.g. in a virtualenv and in the user site: importlib.metadata lists one distribution
    # per name (the first on sys.path), so there is nothing to warn about
    install(site, "zerograd-arrayapi-example", {"arrayapi": "zerograd_arrayapi"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = [row for row in list_backends() if row.name == "arrayapi"]
    assert [(r.plugin, r.distribution) for r in rows] == [("arrayapi", "zerograd-arrayapi-example")]


def test_installed_twice_under_two_plugin_names_warns_about_the_backend_name(site):
    install(site, "zerograd-arrayapi-fork", {"arrayapi-fork": "zerograd_arrayapi"})
    with pytest.warns(BackendPluginWarning, match="has the same name as the one from") as caught:
        rows = {row.name: row for row in list_backends()}
    assert "backend plugin 'arrayapi'" in str(caught[0].message)
    assert "pip uninstall zerograd-arrayapi-example" in str(caught[0].message)
    assert rows["arrayapi"].plugin == "arrayapi-fork"


def test_a_plugin_whose_import_raises_is_skipped_with_a_warning(site):
    install_broken(site)
    with pytest.warns(BackendPluginWarning) as caught:
        names = _names()
    assert str(caught[0].message) == (
        "zerograd: backend plugin 'broken' (zerograd_broken_plugin, from zerograd-broken) "
        "failed to import: ImportError: needs libfoo, which is not installed. It was skipped "
        "and the other backends still work. Reinstall or fix it, or remove it: "
        "pip uninstall zerograd-broken (or keep it installed but unused: "
        "ZEROGRAD_BLOCK_PLUGINS=zerograd-broken)."
    )
    assert {"arrayapi", "numpy"} <= set(names) and "broken" not in names
    x = zerograd.Variable(get_backend("arrayapi").from_numpy(np.array(2.0)))
    (x * x).backward()
    assert x.grad.item() == 4.0


def test_strict_mode_makes_the_broken_import_an_error(site, monkeypatch):
    install_broken(site)
    monkeypatch.setenv("ZEROGRAD_STRICT_PLUGINS", "1")
    refresh()
    with pytest.raises(BackendPluginError, match=r"plugin 'broken' .* failed to import"):
        list_backends()


def test_set_strict_does_the_same(site):
    install_broken(site)
    set_strict()
    with pytest.raises(BackendPluginError, match="ImportError: needs libfoo"):
        get_backend("arrayapi")


def test_blocking_the_broken_plugin_silences_it(site, monkeypatch):
    install_broken(site)
    monkeypatch.setenv("ZEROGRAD_BLOCK_PLUGINS", "broken")
    refresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all
        assert {"arrayapi", "numpy"} <= set(_names())


def test_a_blocked_plugin_is_not_loaded(monkeypatch):
    monkeypatch.setenv("ZEROGRAD_BLOCK_PLUGINS", " arrayapi , other")
    refresh()
    assert "arrayapi" not in _names() and "numpy" in _names()
    with pytest.raises(
        NoBackendError,
        match=r"no backend named 'arrayapi' is loaded: its plugin 'arrayapi' \(from "
        r"zerograd-arrayapi-example\) is blocked by ZEROGRAD_BLOCK_PLUGINS= arrayapi , other; "
        r"remove 'arrayapi' from that list\.$",
    ):
        get_backend("arrayapi")
    import array_api_strict

    with pytest.raises(TypeError, match=r"array_api_strict\._array_object\.Array"):
        zerograd.Variable(array_api_strict.asarray([1.0]))


def test_autoload_off_loads_nothing_until_registered_by_hand(monkeypatch):
    monkeypatch.setenv("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", "1")
    refresh()
    assert list_backends() == []
    with pytest.raises(NoBackendError, match="no array backend is (installed|loaded)"):
        zerograd.Variable(np.ones(2))
    with pytest.raises(NoBackendError, match="no backend named 'arrayapi'"):
        get_backend("arrayapi")
    import zerograd_arrayapi

    register(zerograd_arrayapi, name="arrayapi")
    assert _names() == ["arrayapi"]
    b = get_backend("arrayapi")
    y = zerograd.Variable(b.from_numpy(np.array([3.0]))) * 2.0
    assert b.to_numpy(y.data).tolist() == [6.0]


def test_autoload_switch_accepts_the_usual_spellings(monkeypatch):
    for value, loaded in (("true", False), ("ON", False), ("0", True), ("", True)):
        monkeypatch.setenv("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", value)
        refresh()
        assert bool(list_backends()) is loaded, value


def test_a_plugin_that_exits_on_import_does_not_end_the_program(site):
    install(site, "zerograd-quits", {"quits": "zerograd_quits"}, {"zerograd_quits": EXITS})
    with pytest.warns(BackendPluginWarning) as caught:
        x = zerograd.Variable(np.array([1.0, 2.0]))
    assert [str(w.message) for w in caught] == [
        "zerograd: backend plugin 'quits' (zerograd_quits, from zerograd-quits) failed to "
        "import: SystemExit (it called sys.exit(1)). It was skipped and the other backends "
        "still work. Reinstall or fix it, or remove it: pip uninstall zerograd-quits (or keep "
        "it installed but unused: ZEROGRAD_BLOCK_PLUGINS=zerograd-quits)."
    ]
    assert (x * x).data.tolist() == [1.0, 4.0]
    assert {"arrayapi", "numpy"} <= set(_names())


def test_a_distribution_calling_itself_numpy_does_not_displace_zerograd_numpy(site, monkeypatch):
    # earlier on sys.path than zerograd-numpy, and hostile if it were ever imported
    install(site, "numpy-turbo", {"numpy": "numpy_turbo_plugin"}, {"numpy_turbo_plugin": EXITS})
    with pytest.warns(BackendPluginWarning) as caught:
        rows = {row.name: row for row in list_backends()}
    [message] = [str(w.message) for w in caught]
    assert message.startswith(
        "zerograd: backend plugin 'numpy' (numpy_turbo_plugin, from numpy-turbo) claims the "
        "name 'numpy', which belongs to zerograd's own backend from zerograd-numpy"
    )
    assert "pip uninstall numpy-turbo" in message
    assert "ZEROGRAD_BLOCK_PLUGINS=numpy " not in message + " "  # would block the real one
    assert (rows["numpy"].plugin, rows["numpy"].distribution) == ("numpy", "zerograd-numpy")
    # the advice works: blocking the intruder's distribution silences it, numpy stays
    monkeypatch.setenv("ZEROGRAD_BLOCK_PLUGINS", "numpy-turbo")
    refresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert get_backend("numpy").name == "numpy"
