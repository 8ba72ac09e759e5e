"""Checkpoints: everything needed to resume training, in one safe ``.npz`` file.

A checkpoint holds the model's parameters, the optimizer's state (hyperparameters, step
counters, per-parameter arrays), the scheduler's state, the data loader's position and
RNG, numpy's global random state (which layers and dropout draw from on the CPU), the
random state of every backend that can save its own (zerograd-cupy's), the epoch and
iteration, and any JSON-able ``extra``. It is an archive of :mod:`zerograd_nn.archives`,
as a weight file is: numeric ``.npy`` members only, the rest as a JSON member, never
pickle, written atomically. Loading checks every part against the objects given
before any of them changes, so a bad or foreign file leaves the training state as it was.

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
from collections.abc import Callable
from typing import Any

from zerograd import Variable
from zerograd.backends import as_numpy, backend_of, get_backend, list_backends
from zerograd.checks import integer

from . import archives as _a
from .state_dict import prepare_load

__all__ = ["CheckpointError", "latest_checkpoint", "load_checkpoint", "save_checkpoint"]

FORMAT = 1
_META = "__checkpoint__"


class CheckpointError(_a.WeightFileError):
    """A checkpoint is unreadable, or does not fit the objects it is loaded into."""


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


def _split(obj: Any, key: str, arrays: dict[str, Any], where: str) -> Any:
    """``obj`` as JSON-able data; arrays go to ``arrays[key]`` and leave a reference."""
    if _is_array(obj):
        a = as_numpy(obj.data if isinstance(obj, Variable) else obj)
        if a.dtype.hasobject:
            raise TypeError(f"save_checkpoint: {where} is an object array; only numbers.")
        arrays[key] = a
        return {"__array__": key}
    if isinstance(obj, dict):
        bad = [k for k in obj if not isinstance(k, str)]
        if bad:
            raise TypeError(f"save_checkpoint: {where} has non-string keys {bad[:3]}.")
        return {k: _split(v, f"{key}/{k}", arrays, f"{where}[{k!r}]") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_split(v, f"{key}/{i}", arrays, f"{where}[{i}]") for i, v in enumerate(obj)]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    item = getattr(obj, "item", None)  # numpy scalars
    if callable(item) and getattr(obj, "shape", None) == ():
        return item()
    raise TypeError(
        f"save_checkpoint: {where} is a {type(obj).__name__}; a checkpoint holds numbers, "
        f"strings, lists, dicts and arrays only."
    )


def _join(obj: Any, arrays: dict[str, Any]) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return arrays[obj["__array__"]]
        return {k: _join(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join(v, arrays) for v in obj]
    return obj


def _check_objects(op: str, model: Any, **others: Any) -> None:
    """Refuse, before anything is read or written, objects of the wrong kind."""
    if not (hasattr(model, "named_params") and hasattr(model, "state_dict")):
        raise TypeError(
            f"{op}: model must be a Layer/Model (with named_params() and state_dict()), got "
            f"{type(model).__name__}."
        )
    for name, obj in others.items():
        if obj is not None and not (
            callable(getattr(obj, "state_dict", None))
            and callable(getattr(obj, "load_state_dict", None))
        ):
            raise TypeError(
                f"{op}: {name} must be None or an object with state_dict() and "
                f"load_state_dict() (a zerograd_nn {name}), got {type(obj).__name__}."
            )


def _global_rng_state() -> dict[str, Any]:
    np = _a.numpy_module()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"kind": kind, "keys": keys, "pos": pos, "has_gauss": has_gauss, "cached": cached}


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
        path: the file; its directory must exist.
        model: the Layer/Model (every parameter must have data).
        optimizer: saved when given (anything with ``state_dict()``).
        scheduler: saved when given (anything with ``state_dict()``).
        loader: saved when given (its position in the epoch and its random state).
        epoch: the epoch training is in.
        iteration: the number of updates done so far.
        extra: anything JSON-able (numbers, strings, lists, dicts) and arrays.

    Returns:
        The path written.

    Raises:
        TypeError: ``model`` is not a Layer/Model, another object has no state dict,
            ``epoch``/``iteration`` is not an int, or a part holds something a checkpoint
            cannot store (nothing is written).
        ValueError: ``epoch`` or ``iteration`` is negative.
        FileNotFoundError: the directory does not exist.
    """
    op = "save_checkpoint"
    _check_objects(op, model, optimizer=optimizer, scheduler=scheduler, loader=loader)
    epoch, iteration = integer(op, "epoch", epoch, 0), integer(op, "iteration", iteration, 0)
    path = _a.npz_path(path, op)
    np = _a.numpy_module()
    empty = [k for k, p in model.named_params().items() if p.data is None]
    if empty:
        raise CheckpointError(
            f"save_checkpoint: parameters {empty} have no data yet; run one forward pass first."
        )
    arrays: dict[str, Any] = {}
    parts: dict[str, Any] = {"format": FORMAT, "epoch": epoch, "iteration": iteration}
    parts["model"] = _split(model.state_dict(), "model", arrays, "the model's state")
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler), ("loader", loader)):
        if obj is not None:
            parts[name] = _split(obj.state_dict(), name, arrays, f"the {name}'s state")
    parts["random"] = _split(_global_rng_state(), "random", arrays, "numpy's random state")
    backend_states = _keeping_numpy_rng(_backend_rng_states)
    parts["backend_random"] = _split(
        backend_states, "backend_random", arrays, "the backends' random states"
    )
    parts["extra"] = _split(extra, "extra", arrays, "extra")
    meta = json.dumps(parts).encode()
    arrays[_META] = np.frombuffer(meta, dtype=np.uint8)
    return _a.write_archive(path, arrays, "save_checkpoint")


def _description(path: str, members: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint's JSON description (read alone), checked; CheckpointError if none."""
    op, save = "load_checkpoint", "save_checkpoint"
    meta = members.get(_META)
    if meta is None or meta.dtype.kind != "u" or len(meta.shape) != 1:
        raise CheckpointError(
            f"{op}: {path!r} is an .npz archive but not a checkpoint (no {_META!r} member); "
            f"weight files are loaded with load_weights()."
        )
    raw = _a.read_members(path, [_META], op, save)[_META]
    try:
        parts = json.loads(raw.tobytes().decode())
    except ValueError as exc:
        raise CheckpointError(f"{op}: {path!r} has a damaged description ({exc}).") from exc
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
        raise CheckpointError(f"{op}: {path!r} has a damaged description ({exc}).") from None
    try:  # a damaged zip directory can lose members whose description survived
        _join(parts, dict.fromkeys(members))  # the lookups the load will make, on names only
    except (KeyError, TypeError) as exc:
        raise CheckpointError(
            f"{op}: {path!r} is damaged: its description names an array that the archive "
            f"does not list ({exc}); it may be truncated. Save it again with {save}()."
        ) from None
    return parts


def _read(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    op, save = "load_checkpoint", "save_checkpoint"
    members = _a.inspect_archive(path, op, save, "checkpoint")
    parts = _description(path, members)
    bad = [k for k, m in members.items() if m.dtype.kind not in "fiub"]
    if bad:
        raise CheckpointError(f"{op}: {path!r} holds non-numeric arrays {bad}.")
    arrays = _a.read_members(path, [k for k in members if k != _META], op, save)
    return parts, arrays


def latest_checkpoint(directory: str | os.PathLike) -> str:
    """The checkpoint in ``directory`` with the highest iteration (then epoch, then mtime).

    Only each ``.npz`` file's small description is read, so the names do not matter
    (``snapshot_iter_90.npz`` and ``snapshot_iter_00000675.npz`` compare by what they
    hold); files that are not readable checkpoints are passed over.

    Args:
        directory: the folder to look in (a ``Trainer``'s ``out``).

    Returns:
        The path of the newest checkpoint.

    Raises:
        FileNotFoundError: ``directory`` does not exist or holds no readable checkpoint.
        NotADirectoryError: ``directory`` is a file.
    """
    op = "latest_checkpoint"
    directory = os.fspath(directory)
    if not os.path.exists(directory):
        raise FileNotFoundError(f"{op}: no folder at {directory!r}")
    if not os.path.isdir(directory):
        raise NotADirectoryError(
            f"{op}: {directory!r} is a file, not a folder; load it with load_checkpoint()."
        )
    best, best_key, passed = None, None, []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.startswith(".") or not name.endswith(".npz") or not os.path.isfile(path):
            continue
        try:
            parts = _description(
                path, _a.inspect_archive(path, op, "save_checkpoint", "checkpoint")
            )
        except (OSError, ValueError):  # a weight file, a damaged or foreign archive
            passed.append(name)
            continue
        key = (parts["iteration"], parts["epoch"], os.stat(path).st_mtime_ns)
        if best_key is None or key > best_key:
            best, best_key = path, key
    if best is None:
        also = f" ({len(passed)} .npz files that are not checkpoints: {passed[:5]})"
        raise FileNotFoundError(
            f"{op}: no checkpoint in {directory!r}{also if passed else ''}; a Trainer writes "
            f"them with trainer.extend(Snapshot())."
        )
    return best


def _rng_commit(state: Any) -> Callable[[], None]:
    np = _a.numpy_module()
    t = (state["kind"], state["keys"], state["pos"], state["has_gauss"], state["cached"])
    np.random.RandomState().set_state(t)  # checks it without touching the global state
    return lambda: np.random.set_state(t)


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
    global random state is restored too.

    Args:
        path: the checkpoint file.
        model: the Layer/Model to restore.
        optimizer: the optimizer to restore, or None.
        scheduler: the scheduler (anything with ``load_state_dict()``) to restore, or None.
        loader: the data loader to restore, or None.
        strict: the model must have exactly the checkpoint's parameter names; False loads
            the names that match and skips the others (as ``Layer.load_state_dict``; to
            start a changed model from a checkpoint, without its optimizer).

    Returns:
        ``{"epoch", "iteration", "extra"}``.

    Raises:
        TypeError: ``model`` is not a Layer/Model, or another object has no state dict.
        FileNotFoundError: no file at ``path``.
        CheckpointError: unreadable, ``path`` is a folder, or an object was given whose
            state the file lacks.
        ValueError: a part does not fit its object (names, shapes, types); nothing changed.
    """
    op = "load_checkpoint"
    _check_objects(op, model, optimizer=optimizer, scheduler=scheduler, loader=loader)
    path = _a.find_archive(path, op, "checkpoint", "latest_checkpoint(folder) finds its newest")
    parts, arrays = _read(path)
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler), ("loader", loader)):
        if obj is not None and name not in parts:
            raise CheckpointError(
                f"{op}: {path!r} holds no {name} state; pass {name}=None or save it with "
                f"save_checkpoint(..., {name}=...)."
            )
    model_commit, incoming, _ = prepare_load(
        model, _join(parts["model"], arrays), strict, owner=type(model).__name__
    )
    commits = [model_commit]
    if optimizer is not None:
        commits.append(
            optimizer.prepare_load_state_dict(_join(parts["optimizer"], arrays), incoming)
        )
    if scheduler is not None:
        sd = _join(parts["scheduler"], arrays)
        prepare = getattr(scheduler, "prepare_load_state_dict", None)
        commits.append(prepare(sd) if prepare else lambda: scheduler.load_state_dict(sd))
    commits.append(_rng_commit(_join(parts["random"], arrays)))
    backend_states = _join(parts.get("backend_random"), arrays)
    commits.append(_keeping_numpy_rng(lambda: _backend_rng_commit(op, path, backend_states)))
    if loader is not None:
        # the loader checks its own state and changes nothing when it refuses it; it goes
        # first so that a refusal leaves everything else untouched too
        loader.load_state_dict(_join(parts["loader"], arrays))
    for commit in commits:  # none of these can fail: everything was checked above
        commit()
    return {
        "epoch": parts["epoch"],
        "iteration": parts["iteration"],
        "extra": _join(parts["extra"], arrays),
    }
