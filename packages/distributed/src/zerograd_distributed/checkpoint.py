"""Checkpoints of a data-parallel run: rank 0 writes, every rank can resume.

Every rank holds the same parameters and optimizer state, so one file is enough: the
``root`` rank writes it with ``zerograd_nn.checkpoint.save_checkpoint`` while the
others wait, and every rank reads it back with ``load_checkpoint`` (the file must be
visible to all of them, e.g. on a shared file system). A failure on one rank is reported on
every rank, so none is left waiting. The data loader and random states (numpy's, Python's
``random``) saved are the root's; on resume every rank starts from them (their shards still
differ).
"""

from __future__ import annotations

import os
from typing import Any

from zerograd_nn import checkpoint as _nn

from .communicator import Communicator
from .optimizer import DataParallelOptimizer

__all__ = ["load_checkpoint", "save_checkpoint"]


def _unwrap(optimizer: Any) -> Any:
    return optimizer.optimizer if isinstance(optimizer, DataParallelOptimizer) else optimizer


def save_checkpoint(
    comm: Communicator,
    path: str | os.PathLike,
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    loader: Any = None,
    epoch: int = 0,
    iteration: int = 0,
    extra: Any = None,
    root: int = 0,
) -> str:
    """Write a checkpoint on rank ``root`` only; call it on every rank.

    Args:
        comm: the communicator.
        path: the file (``.npz`` appended if missing), as
            ``zerograd_nn.checkpoint.save_checkpoint`` takes it.
        model: the model whose parameters are saved.
        optimizer: the optimizer to save, or None; a ``DataParallelOptimizer`` is saved as
            the optimizer it wraps.
        scheduler: the learning-rate scheduler to save, or None.
        loader: the data loader whose position is saved, or None.
        epoch: the epoch to record.
        iteration: the iteration to record.
        extra: anything else to record (what ``zerograd_nn.checkpoint`` accepts).
        root: the rank that writes.

    Returns:
        The path written, on every rank.

    Raises:
        ValueError: ``root`` is not a rank.
        Exception: on ``root``, whatever writing raised.
        RuntimeError: on the other ranks, when writing failed on ``root`` (the message
            names the error). Every rank returns or raises only once ``root`` is done.
    """
    comm.check_root("save_checkpoint", root)
    written, error = None, None
    if comm.rank == root:
        try:
            written = _nn.save_checkpoint(
                path,
                model=model,
                optimizer=_unwrap(optimizer),
                scheduler=scheduler,
                loader=loader,
                epoch=epoch,
                iteration=iteration,
                extra=extra,
            )
        except Exception as e:  # every rank must hear of it
            error = e
    with comm.during("checkpoint.save_checkpoint()"):
        outcome = comm.bcast_obj(
            (written, None if error is None else f"{type(error).__name__}: {error}"), root
        )
    if error is not None:
        raise error
    if outcome[1] is not None:
        raise RuntimeError(f"save_checkpoint: rank {root} could not write {path!r}: {outcome[1]}")
    return outcome[0]


def load_checkpoint(
    comm: Communicator,
    path: str | os.PathLike,
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    loader: Any = None,
) -> dict:
    """Resume every rank from one checkpoint; call it on every rank.

    The ranks first agree that each of them can see the file, so none starts loading
    while another cannot. Then each rank reads and checks the file against its objects
    (``zerograd_nn.checkpoint.prepare_load_checkpoint``), changing nothing; only when every
    rank could do so does every rank take the checkpoint's state. A file damaged on one
    rank's disk, or an object that does not fit on one rank, leaves every rank as it was.
    Afterwards the parameters are the same everywhere and count as broadcast (no skipped
    first update).

    Args:
        comm: the communicator.
        path: the checkpoint (``.npz`` may be left out).
        model: the model whose parameters are restored.
        optimizer: the optimizer to restore, or None (a ``DataParallelOptimizer``'s
            wrapped optimizer is restored).
        scheduler: the scheduler to restore, or None.
        loader: the data loader to restore, or None.

    Returns:
        ``{"epoch", "iteration", "extra"}``.

    Raises:
        FileNotFoundError: on every rank, when some rank cannot see the file (nothing changes).
        Exception: what ``zerograd_nn.checkpoint.load_checkpoint`` raised, on a rank where
            reading or checking failed (nothing changes on any rank).
        RuntimeError: on the other ranks then (the message names the failed ranks and
            their errors; nothing changes).
    """
    p = os.fspath(path)
    with comm.during("checkpoint.load_checkpoint()"):
        seen = comm.allgather_obj(os.path.isfile(p) or os.path.isfile(p + ".npz"))
    missing = [r for r, ok in enumerate(seen) if not ok]
    if missing:
        raise FileNotFoundError(
            f"load_checkpoint: ranks {missing} cannot see {p!r}; every rank reads the "
            f"checkpoint, so put it on a file system they share (nothing was loaded)."
        )
    commit, info, error = None, None, None
    try:
        commit, info = _nn.prepare_load_checkpoint(
            path, model=model, optimizer=_unwrap(optimizer), scheduler=scheduler, loader=loader
        )
    except Exception as e:
        error = e
    with comm.during("checkpoint.load_checkpoint()"):
        errors = comm.allgather_obj(None if error is None else f"{type(error).__name__}: {error}")
    if error is not None:
        raise error
    failed = [(r, e) for r, e in enumerate(errors) if e]
    if failed:
        listed = "; ".join(f"rank {r}: {e}" for r, e in failed)
        raise RuntimeError(
            f"load_checkpoint: other ranks could not load {p!r} ({listed}); no rank loaded "
            f"it, so every rank is as it was: fix the cause and load again on every rank."
        )
    commit()
    comm.mark_synced(model.params())
    return info
