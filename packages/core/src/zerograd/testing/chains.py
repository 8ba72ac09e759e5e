"""A reference for :meth:`zerograd.backends.Backend.fuse`: a chain run one call per step.

A backend plugin's fused kernels should give, bit for bit (or within the libm's last bits
for ``exp``, ``log``, ``tanh``, ``sin`` and ``cos``), what :class:`StepByStep` gives: each op of
:data:`zerograd.backends.chains.ARITY` as its operator or the array module's function of
its name, one after another, which is what a replay does without fusion. As a backend's
``fuse`` (:func:`fuse_step_by_step`), it shows which chains a replay found and how often
each ran.
"""

from __future__ import annotations

from typing import Any

from ..backends import get_array_module
from ..backends.chains import FUNCTIONS, Chain


class StepByStep:
    """``chain`` on ``dtype`` arrays, one array call per step; counts its runs.

    Args:
        chain: The chain.
        dtype: The dtype of its inputs; a float argument of a step is cast to it.

    Attributes:
        runs: How many times it ran.
    """

    def __init__(self, chain: Chain, dtype: Any) -> None:
        self.chain, self.dtype, self.runs = chain, dtype, 0

    def __call__(self, *arrays: Any) -> Any:
        chain = self.chain
        if len(arrays) != len(chain.inputs):
            raise TypeError(f"the chain reads {len(chain.inputs)} arrays, got {len(arrays)}")
        xp = get_array_module(arrays[0])
        env = dict(zip(chain.inputs, arrays))
        for step in chain.steps:
            args = [
                env[a] if isinstance(a, str) else xp.asarray(a, dtype=self.dtype) for a in step.args
            ]
            env[step.name] = FUNCTIONS[step.op](xp, *args)
        self.runs += 1
        return env[chain.steps[-1].name]

    @property
    def ops(self) -> list[str]:
        """The chain's ops, in order."""
        return [step.op for step in self.chain.steps]


def fuse_step_by_step(monkeypatch: Any, backend: Any) -> list[StepByStep]:
    """Make ``backend.fuse`` answer every chain with a :class:`StepByStep` (for tests).

    Args:
        monkeypatch: pytest's fixture, which puts the backend's own ``fuse`` back after.
        backend: The backend (``backend_of(np.zeros(1))``: numpy's).

    Returns:
        The list the runners go into, in the order the chains were found.
    """
    asked: list[StepByStep] = []

    def fuse(chain: Chain, dtype: Any) -> StepByStep:
        asked.append(StepByStep(chain, dtype))
        return asked[-1]

    monkeypatch.setattr(backend, "fuse", fuse)
    return asked
