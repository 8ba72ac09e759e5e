"""The Evaluator extension: loss and metrics averaged over a validation loader."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zerograd import no_grad, test_mode
from zerograd.checks import callable_arg

from .extension import PRIORITY_WRITER, Extension, metric_functions, observed_number

_WHO = "zerograd_nn.training.Evaluator"


class Evaluator(Extension):
    """Runs the model over ``loader`` in test mode without a graph, and adds the averages.

    The loss and each metric are averaged over every example (each batch weighted by its
    size) and written into ``trainer.observation`` as ``val/loss``, ``val/<metric>``, where
    LogReport, schedulers and EarlyStopping find them.

    Args:
        loader: yields ``(x, t)`` batches; one full pass per evaluation (don't shuffle it:
            without ``seed=`` a shuffling loader draws from the training's random state;
            snapshots keep a shuffling loader's state, so a resume evaluates in its order).
        model: the model to evaluate (default: the trainer's).
        loss_fn: default: the trainer's.
        metrics: ``{name: fn(y, t)}`` (default: the trainer's).
        prefix: put before each key.
        trigger: when to evaluate (default: each epoch).
    """

    priority = PRIORITY_WRITER

    def __init__(
        self,
        loader: Any,
        model: Any = None,
        loss_fn: Callable[[Any, Any], Any] | None = None,
        metrics: Mapping[str, Callable[[Any, Any], Any]] | None = None,
        prefix: str = "val/",
        trigger: Any = (1, "epoch"),
    ) -> None:
        for what, fn in (("model", model), ("loss_fn", loss_fn)):
            callable_arg(_WHO, what, fn, optional=True, hint="None: the trainer's")
        self.loader, self.model, self.loss_fn = loader, model, loss_fn
        self.metrics = None if metrics is None else metric_functions(_WHO, metrics)
        self.prefix, self.trigger = prefix, trigger

    def evaluate(self, trainer: Any) -> dict[str, float]:
        """Make one pass over the loader and average the loss and metrics.

        Args:
            trainer: the ``Trainer`` whose model, loss function and metrics fill in those
                not given to the constructor.

        Returns:
            ``{prefix + name: average over every example}``, ``loss`` included.

        Raises:
            ValueError: the loader yielded no example.
        """
        model = self.model if self.model is not None else trainer.model
        loss_fn = self.loss_fn if self.loss_fn is not None else trainer.loss_fn
        metrics = self.metrics if self.metrics is not None else trainer.metrics
        fns = {"loss": loss_fn, **metrics}
        sums = dict.fromkeys(fns, 0.0)
        count = 0
        with no_grad(), test_mode():
            for x, t in self.loader:
                y = model(x)
                n = len(t)
                for name, fn in fns.items():
                    sums[name] += observed_number(_WHO, name, fn(y, t)) * n
                count += n
        if count == 0:
            raise ValueError(f"{_WHO}: the validation loader yielded no example; check its dataset")
        return {self.prefix + k: v / count for k, v in sums.items()}

    def __call__(self, trainer: Any) -> None:
        """Evaluate and add the averages to ``trainer.observation``.

        Args:
            trainer: the running ``Trainer``.
        """
        trainer.observation.update(self.evaluate(trainer))

    @property
    def state_tag(self) -> str:
        """The ``prefix``: what tells two Evaluators' snapshot states apart."""
        return self.prefix

    def state_dict(self) -> dict[str, Any]:
        """The loader's state when it shuffles (``loader``), else nothing.

        A shuffling ``DataLoader`` draws the next pass's order when a pass ends: a resumed
        run's fresh loader would evaluate in another order, and the averages would differ
        from the uninterrupted run's in the last digits.

        Returns:
            ``{"loader": loader.state_dict()}``, or ``{}``.
        """
        if not getattr(self.loader, "shuffle", False):  # (numpy's True too)
            return {}
        state = getattr(self.loader, "state_dict", None)
        return {} if state is None else {"loader": state()}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Give the loader the state ``state_dict`` saved (a snapshot without one: nothing).

        Args:
            d: a dict from ``state_dict``.

        Raises:
            ValueError: the loader refuses the state (it changes nothing then).
        """
        if "loader" in d:
            self.loader.load_state_dict(d["loader"])


__all__ = ["Evaluator"]
