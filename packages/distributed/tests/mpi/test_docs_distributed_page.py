"""docs/distributed.md's claims, on every rank.

"A training script": the page's script keeps the one-process ``batch_size=30`` on every
rank, so one step averages ``30 * N`` examples and an epoch has about ``1 / N`` as many
updates. The page said two ranks reach about 92 % "like the one-process version", which
reaches about 97 %.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import zerograd
import zerograd_nn.functional as F
from zerograd import Parameter
from zerograd_distributed import (
    DataParallelOptimizer,
    broadcast_params,
    evaluate,
    scatter_dataset,
)
from zerograd_nn import DataLoader
from zerograd_nn.datasets import Spiral
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD

EPOCHS = 300


def _train_the_pages_way(comm, batch_size):
    """The page's script, seeded; (accuracy over every example once, updates made)."""
    zerograd.seed(0)
    model = MLP((10, 3))
    model(np.zeros((1, 2), np.float32))
    broadcast_params(model, comm)
    optimizer = DataParallelOptimizer(SGD(lr=1.0), comm).setup(model)
    shard = scatter_dataset(Spiral(), comm, seed=0)
    updates = 0
    for _ in range(EPOCHS):
        for x, t in DataLoader(shard, batch_size=batch_size):
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            updates += 1
    every_example_once = scatter_dataset(Spiral(), comm, pad=False)
    metrics = evaluate(
        comm,
        lambda x, t: {"acc": F.accuracy(model(x), t)},
        DataLoader(every_example_once, batch_size=100, shuffle=False),
    )
    return metrics["acc"], updates


def test_the_pages_script_takes_fewer_updates_on_more_ranks_and_lands_lower(comm):
    """The page: two ranks reach about 92 %, one process about 97 %, because each rank's
    batch of 30 makes a step over 30 * N examples (fewer updates per epoch)."""
    acc, updates = _train_the_pages_way(comm, 30)
    assert updates == EPOCHS * math.ceil(math.ceil(300 / comm.size) / 30)
    if comm.size == 1:
        assert acc >= 0.96, acc
    else:
        assert 0.85 <= acc < 0.955, acc
    assert comm.allgather_obj(acc) == [acc] * comm.size


def test_a_batch_of_30_over_n_per_rank_matches_the_one_process_run(comm):
    """The page: give each rank ``batch_size / N`` to take the one-process run's steps."""
    if comm.size > 2:
        pytest.skip("the page speaks of 2 ranks; 3 ranks on 2 cores would take 15 s more")
    per_rank = 30 // comm.size
    acc, updates = _train_the_pages_way(comm, per_rank)
    assert updates == EPOCHS * math.ceil(math.ceil(300 / comm.size) / per_rank)
    assert acc >= 0.96, acc


def test_a_list_of_parameters_is_compared_by_name_only_where_names_are_set(comm):
    """The page, "How gradients travel": a list of Parameters has no names (unless
    Parameter.name is set), so ranks listing two of one shape in another order cannot be
    told apart; with names, every rank raises at setup, leaving the wrapped optimizer as it
    was."""
    if comm.size == 1:
        pytest.skip("needs two ranks or more: one rank cannot disagree with itself")
    a, b = Parameter(np.ones((3, 3), np.float32)), Parameter(np.full((3, 3), 2, np.float32))
    params = [a, b] if comm.rank == 0 else [b, a]
    DataParallelOptimizer(SGD(lr=0.1), comm).setup(params)  # nothing to compare them by
    a.name, b.name = "a", "b"
    wrapped = SGD(lr=0.1)
    with pytest.raises(ValueError) as info:
        DataParallelOptimizer(wrapped, comm).setup(params)
    assert str(info.value).startswith(
        "DataParallelOptimizer.setup(): the ranks hold different parameters (rank 1: parameter "
        "0 is 'b' of shape (3, 3) and dtype float32 where rank 0 has 'a' of shape (3, 3) and "
        "dtype float32"
    )
    assert wrapped.target is None and wrapped.param_groups == []
