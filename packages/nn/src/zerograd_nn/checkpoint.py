"""Checkpoints: everything needed to resume training, in one safe ``.npz`` file.

A checkpoint holds the model's parameters, the optimizer's state (hyperparameters, step
counters, per-parameter arrays), the scheduler's state, the data loader's position and
RNG, numpy's global random state (which layers and dropout draw from on the CPU), Python's
``random`` state (which ``RandomHorizontalFlip`` draws from), the random state of every
backend that can save its own (zerograd-cupy's), the epoch and iteration, and any JSON-able
``extra``. A checkpoint written before Python's state was saved loads as before and leaves
Python's ``random`` as it is. It is an archive of :mod:`zerograd_nn.archives`,
as a weight file is: numeric ``.npy`` members only, the rest as a JSON member, never
pickle, written atomically.

Every value of ``extra`` comes back as it was saved, with two conversions JSON makes:
tuples come back as lists, and numpy scalars as Python numbers; arrays come back as
numpy arrays. A dict may use any string keys (``"__array__"``, ``"a/b"`` included).

Loading is one pass over the file, in four steps with one home each:

1. open: :func:`zerograd_nn.archives.open_archive` opens a regular file (or refuses the
   path with one error) and checks its directory and array headers;
2. read and verify: :func:`_description` reads the JSON description and checks it (the
   format, the counters, the parts, each array it names), then the arrays are read;
3. convert: :func:`_prepare` has each object (model, optimizer, scheduler, random states,
   loader) check and convert its part, changing nothing;
4. commit: every object takes its part; nothing there can fail.

So a bad or foreign file leaves the training state as it was. :func:`prepare_load_checkpoint`
runs the first three steps and hands back the fourth, for a caller that commits only once
others could load too (data-parallel training's ranks).

>>> import os, tempfile
>>> import numpy as np
>>> from zerograd_nn.models import MLP
>>> from zerograd_nn.optimizers import Adam
>>> model = MLP((3, 2))
>>> _ = model(np.ones((1, 4), np.float32))
>>> opt = Adam().setup(model)
>>> path = os.path.join(tempfile.mkdtemp(), "run.npz")
>>> _ = save_checkpoint(path, model=model, optimizer=opt, epoch=3)
>>> load_checkpoint(path, model=MLP((3, 2)), optimizer=None)["epoch"]
3
"""

from __future__ import annotations

import json
import os
import random
import string
import warnings
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

from zerograd import Variable
from zerograd.backends import as_numpy, backend_of, get_backend, list_backends
from zerograd.checks import flag, integer

from . import archives as _a
from .state_dict import prepare_load

__all__ = [
    "CheckpointError",
    "latest_checkpoint",
    "load_checkpoint",
    "prepare_load_checkpoint",
    "save_checkpoint",
]

FORMAT = 1
_META = _a.CHECKPOINT_MEMBER
_REF = "__array__"  # {"__array__": member name} in the description stands for an array
_SAVE = "save_checkpoint"
# member names keep printable ASCII but for the separator, the escape and the backslash
# (zip writers turn it into "/" on Windows); the rest is %-escaped, so that two keys never
# share a member ("a/b" and "a" -> "b" are "a%2Fb" and "a/b")
_SAFE = "".join(c for c in string.printable[:95] if c not in "/%\\")


class CheckpointError(_a.WeightFileError):
    """A checkpoint is unreadable, or does not fit the objects it is loaded into.

    Attributes:
        missing: the part (``"optimizer"``, ``"scheduler"``, ``"loader"``) an object was
            given for but the file does not hold, else None.
    """

    missing: str | None = None


def _is_array(x: Any) -> bool:
    if isinstance(x, Variable):
        return True
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        return False
    try:
        backend_of(x)
    except Exception:  # noqa: BLE001 - an array type no backend owns
        return False
    return True


def _split(
    obj: Any, key: str, arrays: dict[str, Any], where: str, inside: tuple[int, ...] = ()
) -> Any:
    """``obj`` as JSON-able data; arrays go to ``arrays[key]`` and leave a reference.

    A dict whose only key is ``"__array__"`` is saved as ``{"__array__": [its value]}``: a
    reference is always a string, so :func:`_join` tells the two apart. ``inside`` holds
    the ids of the lists and dicts ``obj`` is inside of, to refuse one that holds itself.
    """
    if isinstance(obj, (dict, list, tuple)):
        if id(obj) in inside:
            raise ValueError(
                f"save_checkpoint: {where} holds itself (a list or dict inside itself), "
                f"which a checkpoint cannot store. Nothing was written."
            )
        inside = (*inside, id(obj))
    if _is_array(obj):
        a = as_numpy(obj.data if isinstance(obj, Variable) else obj)
        error = _a.stored_dtype_error(_SAVE, where, a.dtype)
        if error is not None:
            raise error
        arrays[key] = a
        return {_REF: key}
    if isinstance(obj, dict):
        bad = [k for k in obj if not isinstance(k, str)]
        if bad:
            raise TypeError(f"save_checkpoint: {where} has non-string keys {bad[:3]}.")
        out = {
            k: _split(v, f"{key}/{_member(k)}", arrays, f"{where}[{k!r}]", inside)
            for k, v in obj.items()
        }
        return {_REF: [out[_REF]]} if set(out) == {_REF} else out
    if isinstance(obj, (list, tuple)):
        return [_split(v, f"{key}/{i}", arrays, f"{where}[{i}]", inside) for i, v in enumerate(obj)]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    item = getattr(obj, "item", None)  # numpy scalars
    if callable(item) and getattr(obj, "shape", None) == ():
        value = item()
        if isinstance(value, (bool, int, float, str)):
            return value
        obj = value  # a complex or a datetime: refused below, by its Python type
    raise TypeError(
        f"save_checkpoint: {where} is a {type(obj).__name__}; a checkpoint holds real "
        f"numbers, strings, None, lists, dicts and arrays only."
    )


def _member(key: str) -> str:
    return quote(key, safe=_SAFE, errors="surrogatepass")


def _refs(obj: Any) -> Iterator[Any]:
    """Every array reference in a description (not checked: see :func:`_description`)."""
    if isinstance(obj, dict):
        if set(obj) == {_REF}:
            ref = obj[_REF]
            if isinstance(ref, list) and len(ref) == 1:  # a dict saved with the key itself
                yield from _refs(ref[0])
            else:
                yield ref
            return
        for v in obj.values():
            yield from _refs(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _refs(v)


def _join(obj: Any, arrays: dict[str, Any]) -> Any:
    """The saved value: ``obj`` with its references replaced by ``arrays``' arrays."""
    if isinstance(obj, dict):
        if set(obj) == {_REF}:
            ref = obj[_REF]
            return arrays[ref] if isinstance(ref, str) else {_REF: _join(ref[0], arrays)}
        return {k: _join(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join(v, arrays) for v in obj]
    return obj


def _check_objects(op: str, model: Any, optimizer: Any, scheduler: Any, loader: Any) -> None:
    """Refuse, before anything is read or written, objects of the wrong kind.

    The optimizer must be one set up on ``model`` (or on some of its parameters): another
    model's would save, or load, a state that does not go with these parameters.
    """
    if not (hasattr(model, "named_params") and hasattr(model, "state_dict")):
        raise TypeError(
            f"{op}: model must be a Layer/Model (with named_params() and state_dict()), got "
            f"{type(model).__name__}."
        )
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler), ("loader", loader)):
        if obj is None:
            continue
        load = "prepare_load_state_dict" if name == "optimizer" else "load_state_dict"
        is_model = hasattr(obj, "named_params")
        if is_model or not all(callable(getattr(obj, m, None)) for m in ("state_dict", load)):
            what = "a model" if is_model else type(obj).__name__
            kind = (
                "a zerograd_nn optimizer set up on the model (Adam().setup(model))"
                if name == "optimizer"
                else f"an object with state_dict() and load_state_dict() (a zerograd_nn {name})"
            )
            raise TypeError(f"{op}: {name} must be None or {kind}, got {what}.")
    outside = getattr(optimizer, "params_outside", None)
    foreign = outside(model) if callable(outside) else []
    if foreign:
        raise ValueError(
            f"{op}: the optimizer updates parameters that are not the model's "
            f"({len(foreign)}: {foreign[:5]}); it was set up on another model. Set it up on "
            f"this one (optimizer.setup(model)). Nothing was "
            f"{'written' if op == _SAVE else 'changed'}."
        )


def _global_rng_state() -> dict[str, Any]:
    np = _a.numpy_module()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"kind": kind, "keys": keys, "pos": pos, "has_gauss": has_gauss, "cached": cached}


def _py_rng_state() -> dict[str, Any]:
    """Python's ``random`` state as JSON and one array: its 624 words and position."""
    np = _a.numpy_module()
    version, internal, gauss = random.getstate()
    return {"version": version, "state": np.array(internal, np.uint32), "gauss": gauss}


def _keeping_numpy_rng(fn: Callable[[], Any]) -> Any:
    """``fn()`` with numpy's global random state put back afterwards.

    Asking a backend for its generator may import its library the first time, and importing
    JAX draws from numpy's global generator: neither a save nor a failed load may move it.
    """
    np = _a.numpy_module()
    state = np.random.get_state()
    try:
        return fn()
    finally:
        np.random.set_state(state)


def _backend_rng_states() -> dict[str, Any]:
    """The random states of the available backends that can save theirs (the GPU's)."""
    states = {}
    for row in list_backends():
        if row.available:
            state = get_backend(row.name).random_state()
            if state is not None:
                states[row.name] = state
    return states


def _backend_rng_commit(op: str, path: str, states: Any) -> Callable[[], None]:
    """Check the saved backend random states; return what restores them.

    A backend not usable here (a GPU checkpoint resumed on a CPU-only machine) is skipped:
    nothing draws from it in this process.
    """
    usable = {row.name for row in list_backends() if row.available}
    todo = []
    for name, state in (states or {}).items():
        if name not in usable:
            continue
        backend = get_backend(name)
        before = backend.random_state()
        try:
            backend.set_random_state(state)  # checks it; restored just below
        except (TypeError, ValueError, NotImplementedError) as exc:
            raise CheckpointError(
                f"{op}: {path!r} holds a random state for backend {name!r} that it refuses ({exc})."
            ) from None
        backend.set_random_state(before)
        todo.append((backend, state))
    return lambda: [backend.set_random_state(state) for backend, state in todo]


def save_checkpoint(
    path: str | os.PathLike,
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    loader: Any = None,
    epoch: int = 0,
    iteration: int = 0,
    extra: Any = None,
) -> str:
    """Write a checkpoint to ``path`` (``.npz`` appended if missing), atomically.

    Args:
        path: the file; its directory must exist. A symbolic link: the file it points at
            is replaced, and the link stays.
        model: the Layer/Model (every parameter must have data).
        optimizer: saved when given: an optimizer set up on ``model``.
        scheduler: saved when given (anything with ``state_dict()``).
        loader: saved when given (its position in the epoch and its random state).
        epoch: the epoch training is in.
        iteration: the number of updates done so far.
        extra: numbers, strings, None, lists, dicts with string keys, and arrays; each
            comes back as saved (tuples as lists, numpy scalars as Python numbers).

    Returns:
        The path written.

    Raises:
        TypeError: ``model`` is not a Layer/Model, ``optimizer`` is not an optimizer
            (a model, say), another object has no state dict, ``epoch``/``iteration`` is
            not an int, or a part holds something a checkpoint cannot store.
        ValueError: ``epoch`` or ``iteration`` is negative, ``path`` names a folder, the
            optimizer was set up on another model, or ``extra`` holds itself.
        FileNotFoundError: the directory does not exist.

    Nothing is written when it raises.
    """
    op = _SAVE
    _check_objects(op, model, optimizer, scheduler, loader)
    epoch, iteration = integer(op, "epoch", epoch, 0), integer(op, "iteration", iteration, 0)
    path = _a.npz_path(path, op)
    np = _a.numpy_module()
    empty = [k for k, p in model.named_params().items() if p.data is None]
    if empty:
        raise CheckpointError(
            f"save_checkpoint: parameters {empty} have no data yet (lazily sized layers that "
            f"have not seen an input; an RNN sizes h2h at its second step); run a forward "
            f"pass first, or pass in_size/in_channels."
        )
    arrays: dict[str, Any] = {}
    parts: dict[str, Any] = {"format": FORMAT, "epoch": epoch, "iteration": iteration}
    parts["model"] = _split(model.state_dict(), "model", arrays, "the model's state")
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler), ("loader", loader)):
        if obj is not None:
            parts[name] = _split(obj.state_dict(), name, arrays, f"the {name}'s state")
    parts["random"] = _split(_global_rng_state(), "random", arrays, "numpy's random state")
    parts["py_random"] = _split(_py_rng_state(), "py_random", arrays, "Python's random state")
    backend_states = _keeping_numpy_rng(_backend_rng_states)
    parts["backend_random"] = _split(
        backend_states, "backend_random", arrays, "the backends' random states"
    )
    parts["extra"] = _split(extra, "extra", arrays, "extra")
    meta = json.dumps(parts).encode()
    arrays[_META] = np.frombuffer(meta, dtype=np.uint8)
    return _a.write_archive(path, arrays, "save_checkpoint")


def _description(archive: _a.Archive) -> dict[str, Any]:
    """The checkpoint's JSON description, read alone and checked; CheckpointError if bad.

    Checks the format, the counters, the parts a load reads and every array reference
    (each must name a numeric member), so that the later steps meet no missing piece.
    """
    op, path, members = "load_checkpoint", archive.path, archive.members
    meta = members.get(_META)
    if meta is None or meta.dtype.kind != "u" or len(meta.shape) != 1:
        raise CheckpointError(
            f"{op}: {path!r} is an .npz archive but not a checkpoint (no {_META!r} member); "
            f"weight files are loaded with load_weights()."
        )
    raw = archive.read([_META])[_META]

    def damaged(what: str) -> CheckpointError:
        return CheckpointError(f"{op}: {path!r} has a damaged description ({what}).")

    try:
        parts = json.loads(raw.tobytes().decode())
    except ValueError as exc:
        raise damaged(str(exc)) from None
    if not isinstance(parts, dict) or parts.get("format") != FORMAT:
        got = parts.get("format") if isinstance(parts, dict) else None
        raise CheckpointError(
            f"{op}: {path!r} is a checkpoint of format {got!r}; this version of zerograd-nn "
            f"reads format {FORMAT}."
        )
    try:
        for k in ("epoch", "iteration"):
            integer(op, k, parts.get(k), 0)
    except (TypeError, ValueError) as exc:
        raise damaged(str(exc)) from None
    if not isinstance(parts.get("model"), dict):
        raise damaged("no model part")
    if not isinstance(parts.get("random"), dict) or set(parts["random"]) != set(_RNG):
        raise damaged("no numpy random state")
    for ref in _refs(parts):
        if not isinstance(ref, str):
            raise damaged(f"an array reference {ref!r} that is not a name")
        if ref not in members or ref == _META:  # a damaged zip directory can lose members
            raise CheckpointError(
                f"{op}: {path!r} is damaged: its description names an array that the archive "
                f"does not list ({ref!r}); it may be truncated. Save it again with {_SAVE}()."
            )
    bad = [k for k, m in members.items() if m.dtype.kind not in _a.STORED_KINDS]
    if bad:
        raise CheckpointError(f"{op}: {path!r} holds non-numeric arrays {bad}.")
    return parts


def latest_checkpoint(directory: str | os.PathLike) -> str:
    """The checkpoint in ``directory`` with the highest iteration (then epoch, then mtime).

    Only each ``.npz`` file's small description is read, so the names do not matter
    (``snapshot_iter_90.npz`` and ``snapshot_iter_00000675.npz`` compare by what they
    hold); other archives (weight files) are passed over, and so are files that cannot be
    read as checkpoints (damaged, truncated, unreadable), each with a warning naming it:
    the newest may be one of them.

    Args:
        directory: the folder to look in (a ``Trainer``'s ``out``).

    Returns:
        The path of the newest checkpoint.

    Raises:
        FileNotFoundError: ``directory`` does not exist or holds no readable checkpoint.
        NotADirectoryError: ``directory`` is a file.
        PermissionError: ``directory`` cannot be listed.
    """
    op = "latest_checkpoint"
    directory = os.fspath(directory)
    if not os.path.exists(directory):
        raise FileNotFoundError(f"{op}: no folder at {directory!r}")
    if not os.path.isdir(directory):
        raise NotADirectoryError(
            f"{op}: {directory!r} is a file, not a folder; load it with load_checkpoint()."
        )
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:  # no permission to list it
        raise type(exc)(
            exc.errno,
            f"{op}: cannot list the folder {directory!r} ({exc.strerror or exc}); make it "
            f"readable (chmod u+r) or give the path of a checkpoint in it.",
        ) from None
    best, best_key, passed, damaged = None, None, [], []
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(".") or not name.endswith(".npz") or not os.path.isfile(path):
            continue
        try:
            with _a.open_archive(path, op, "checkpoint", _SAVE, error=CheckpointError) as archive:
                if _META not in archive.members:  # a weight file, another archive of arrays
                    passed.append(name)
                    continue
                parts = _description(archive)
        except (OSError, ValueError) as exc:  # a damaged or unreadable file
            passed.append(name)
            damaged.append((path, exc))
            continue
        key = (parts["iteration"], parts["epoch"], os.stat(path).st_mtime_ns)
        if best_key is None or key > best_key:
            best, best_key = path, key
    if best is not None:
        for path, exc in damaged:  # it may have been the newest: say so, once each
            warnings.warn(
                f"{op}: passed over {path!r}, which cannot be read as a checkpoint ({exc}); "
                f"{best!r} is the newest readable checkpoint. Delete or move the damaged "
                f"file to silence this warning.",
                stacklevel=2,
            )
    if best is None:
        also = f" ({len(passed)} .npz files that are not checkpoints: {passed[:5]})"
        raise FileNotFoundError(
            f"{op}: no checkpoint in {directory!r}{also if passed else ''}; a Trainer writes "
            f"them with trainer.extend(Snapshot())."
        )
    return best


_RNG = ("kind", "keys", "pos", "has_gauss", "cached")


def _rng_commit(op: str, path: str, state: dict[str, Any]) -> Callable[[], None]:
    np = _a.numpy_module()
    t = tuple(state[k] for k in _RNG)
    try:
        np.random.RandomState().set_state(t)  # checks it without touching the global state
    except (TypeError, ValueError) as exc:
        raise CheckpointError(
            f"{op}: {path!r} holds a numpy random state that numpy refuses ({exc})."
        ) from None
    return lambda: np.random.set_state(t)


def _py_rng_commit(op: str, path: str, state: Any) -> Callable[[], None]:
    """Check Python's saved ``random`` state; return what restores it.

    A checkpoint written before this state was saved has none: Python's ``random`` is then
    left as it is.
    """
    if state is None:
        return lambda: None
    try:
        version, words, gauss = state["version"], state["state"], state["gauss"]
        if getattr(words, "dtype", None) is None or words.dtype.kind not in "iu":
            raise TypeError("its words are not integers")
        if gauss is not None and (isinstance(gauss, bool) or not isinstance(gauss, float)):
            raise TypeError(f"gauss is {gauss!r}, not a float or None")
        t = (version, tuple(int(w) for w in words.reshape(-1)), gauss)
        random.Random().setstate(t)  # checks it without touching the global state
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise CheckpointError(
            f"{op}: {path!r} holds a Python random state that Python refuses ({exc}); it is "
            f"damaged. Resume from another checkpoint."
        ) from None
    return lambda: random.setstate(t)


def _prepare(
    path: str,
    saved: dict[str, Any],
    model: Any,
    optimizer: Any,
    scheduler: Any,
    loader: Any,
    strict: bool,
) -> list[Callable[[], None]]:
    """Each object checks and converts its part of ``saved``; returns their commits.

    Nothing changes here, except a loader without ``prepare_load_state_dict`` (zerograd's
    loaders have it), which goes last: it checks its own state and changes nothing when it
    refuses it, and once it took it nothing else can fail.
    """
    op = "load_checkpoint"
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler), ("loader", loader)):
        if obj is not None and name not in saved:
            error = CheckpointError(
                f"{op}: {path!r} holds no {name} state; pass {name}=None or save it with "
                f"{_SAVE}(..., {name}=...)."
            )
            error.missing = name
            raise error
    model_commit, incoming, _ = prepare_load(
        model, saved["model"], strict, owner=type(model).__name__
    )
    commits = [model_commit]
    if optimizer is not None:
        commits.append(optimizer.prepare_load_state_dict(saved["optimizer"], incoming))
    if scheduler is not None:
        sd = saved["scheduler"]
        prepare = getattr(scheduler, "prepare_load_state_dict", None)
        commits.append(prepare(sd) if prepare else lambda: scheduler.load_state_dict(sd))
    commits.append(_rng_commit(op, path, saved["random"]))
    commits.append(_py_rng_commit(op, path, saved.get("py_random")))
    states = saved.get("backend_random")
    commits.append(_keeping_numpy_rng(lambda: _backend_rng_commit(op, path, states)))
    if loader is not None:
        prepare = getattr(loader, "prepare_load_state_dict", None)
        if prepare is not None:
            commits.append(prepare(saved["loader"]))
        else:
            loader.load_state_dict(saved["loader"])
    return commits


def load_checkpoint(
    path: str | os.PathLike,
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    loader: Any = None,
    strict: bool = True,
) -> dict[str, Any]:
    """Restore what :func:`save_checkpoint` wrote into the objects given, all or nothing.

    The model must have the checkpoint's architecture (lazily sized layers take the saved
    shapes); the optimizer must be set up on it with the same parameter groups. numpy's
    global random state, Python's ``random`` state (when the file holds it: files written
    before zerograd-nn saved it leave it as it is) and the backends' random states are
    restored too.

    Args:
        path: the checkpoint file (``.npz`` may be left out); a regular file or a link to
            one.
        model: the Layer/Model to restore.
        optimizer: the optimizer to restore (set up on ``model``), or None.
        scheduler: the scheduler (anything with ``load_state_dict()``) to restore, or None.
        loader: the data loader to restore, or None.
        strict: the model must have exactly the checkpoint's parameter names; False loads
            the names that match and skips the others (as ``Layer.load_state_dict``; to
            start a changed model from a checkpoint, without its optimizer).

    Returns:
        ``{"epoch", "iteration", "extra"}``.

    Raises:
        TypeError: ``model`` is not a Layer/Model, another object has no state dict, or
            ``strict`` is not True or False (numpy's bools count).
        FileNotFoundError: no file at ``path``.
        CheckpointError: unreadable; ``path`` is a folder, a FIFO or a device; or an
            object was given whose state the file lacks.
        ValueError: a part does not fit its object (names, shapes, types), or the
            optimizer was set up on another model; nothing changed.
    """
    commit, info = prepare_load_checkpoint(
        path, model=model, optimizer=optimizer, scheduler=scheduler, loader=loader, strict=strict
    )
    commit()
    return info


def prepare_load_checkpoint(
    path: str | os.PathLike,
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    loader: Any = None,
    strict: bool = True,
) -> tuple[Callable[[], None], dict[str, Any]]:
    """Read and check a checkpoint as :func:`load_checkpoint` does, changing nothing yet.

    For a caller that must know that every load of a group succeeds before any of them
    takes effect: data-parallel training prepares the load on every rank, and commits only
    when all of them could (``zerograd_distributed.checkpoint.load_checkpoint``). Until the
    commit is called, the model, the optimizer, the scheduler, the loader and the random
    states are as they were; dropping the commit uncalled leaves them so. (A loader object
    without ``prepare_load_state_dict`` is an exception: its ``load_state_dict`` runs
    here.)

    Args:
        path: the checkpoint file, as :func:`load_checkpoint` takes it.
        model: the Layer/Model to restore.
        optimizer: the optimizer to restore, or None.
        scheduler: the scheduler to restore, or None.
        loader: the data loader to restore, or None.
        strict: as :func:`load_checkpoint`.

    Returns:
        ``(commit, info)``: ``commit()`` restores everything and cannot fail; ``info`` is
        what :func:`load_checkpoint` returns.

    Raises:
        Exception: what :func:`load_checkpoint` raises, with nothing changed.
    """
    op = "load_checkpoint"
    _check_objects(op, model, optimizer, scheduler, loader)
    strict = flag(op, "strict", strict)
    hint = "latest_checkpoint(folder) finds its newest"
    # 1. open: a regular file, its directory and headers checked
    with _a.open_archive(path, op, "checkpoint", _SAVE, hint, CheckpointError) as archive:
        # 2. read and verify: the description, then the arrays it names
        parts = _description(archive)
        arrays = archive.read(name for name in archive.members if name != _META)
    saved = _join(parts, arrays)
    # 3. convert: each object checks its part against itself, changing nothing
    commits = _prepare(archive.path, saved, model, optimizer, scheduler, loader, strict)

    def commit() -> None:  # 4. commit: none of these can fail, everything was checked
        for one in commits:
            one()

    info = {"epoch": saved["epoch"], "iteration": saved["iteration"], "extra": saved.get("extra")}
    return commit, info
