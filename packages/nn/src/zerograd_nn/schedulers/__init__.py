"""Learning-rate schedulers, with the formulas PyTorch documents for its ``lr_scheduler``.

A scheduler changes the ``lr`` of every parameter group of an optimizer. Creating one sets
the lr of step 0; each ``step()`` (once per epoch or per iteration, as you choose) moves to
the next. ``base_lrs`` are the groups' lrs when the first scheduler was attached to the
optimizer, so schedulers made one after another all start from the same values.

* ``StepLR``: ``base * gamma ** (t // step_size)``
* ``ExponentialLR``: ``base * gamma ** t``
* ``CosineAnnealingLR``: ``eta_min + (base - eta_min) * (1 + cos(pi * t / T_max)) / 2``
* ``CosineAnnealingWarmRestarts``: the same within each period ``T_i`` (``T_0``, then each
  ``T_mult`` times longer), restarting at ``base``
* ``LinearWarmup``: ``base * (start + (1 - start) * min(t, warmup_steps) / warmup_steps)``
* ``ReduceLROnPlateau``: ``lr * factor`` after ``patience`` steps without improvement
* ``SequentialLR``: one scheduler after another, switching (and restarting) at milestones
* ``ChainedScheduler``: all at once; the lr is ``base`` times the product of their factors

An lr changed between two steps (set by hand, ``opt.lr = 0.01``, or by another scheduler
such as ``ReduceLROnPlateau``) carries on as with PyTorch's chainable schedulers: the next
``step()`` goes on from it (StepLR then multiplies it by ``gamma`` at its next boundary).
``CosineAnnealingWarmRestarts`` computes each lr from the base alone, as PyTorch's does, so
its next step replaces such an lr. The values agree with PyTorch's recursions to the last
bit or two (closed forms round differently), and exactly at the milestones and restarts.
A group appended to the optimizer's ``param_groups`` after the scheduler was made (PyTorch's
``add_param_group``) carries on from its own lr in the same way.

>>> from zerograd import Parameter
>>> from zerograd_nn.optimizers import SGD
>>> opt = SGD(lr=0.1).setup([Parameter(None)])
>>> sched = StepLR(opt, step_size=2, gamma=0.5)
>>> for _ in range(4):
...     sched.step()
>>> sched.get_last_lr(), opt.lr
([0.025], 0.025)
"""

from .base import LRScheduler
from .closed_form import (
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LinearWarmup,
    StepLR,
)
from .compose import ChainedScheduler, SequentialLR
from .plateau import ReduceLROnPlateau

__all__ = [
    "ChainedScheduler",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "ExponentialLR",
    "LRScheduler",
    "LinearWarmup",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]
