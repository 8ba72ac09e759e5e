"""The MLP and CNN training steps of bench_nn on the GPU backend (zerograd-cupy) vs numpy.

Without a usable GPU backend it returns one row saying why, so the table shows that the
GPU numbers are missing rather than leaving them out silently.
"""

from __future__ import annotations

from functools import partial

import fw_zerograd as zg
from common import side_by_side
from workloads import cnn_data, cnn_weights, mlp_data, mlp_weights

from zerograd.backends import NoBackendError, as_array_of, gpu_backend


def _gpu_name(backend) -> str:
    try:
        props = backend.xp.cuda.runtime.getDeviceProperties(backend.xp.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # the name is a label only
        return f"GPU ({type(exc).__name__})"


def _on(backend, model, x, t):
    for p in model.params:
        p.to(backend)
    return as_array_of(x, backend), as_array_of(t, backend)


def run(repeat: int = 15) -> list[dict]:
    """The table rows: one per case, or one saying why the GPU run was skipped."""
    try:
        backend = gpu_backend()
    except NoBackendError as exc:
        return [
            {
                "group": "GPU (cupy) vs CPU (numpy), ms/step",
                "case": "skipped",
                "zerograd": None,
                "numpy": None,
                "torch": None,
                "ratio": None,
                "target": "run on a GPU machine",
                "note": str(exc),
            }
        ]
    name = _gpu_name(backend)
    rows = []
    cases = [
        (
            "MLP sigmoid 784-1000-1000-10, batch 100",
            lambda: zg.MLP(mlp_weights(), "sigmoid"),
            mlp_data,
        ),
        (
            "MLP relu 784-1000-1000-10, batch 100",
            lambda: zg.MLP(mlp_weights(), "relu"),
            mlp_data,
        ),
        (
            "CNN conv3x3 1->16, pool 2, linear, batch 32",
            lambda: zg.CNN(cnn_weights()),
            cnn_data,
        ),
    ]
    for case, make, data in cases:
        x, t = data()
        cpu_model, gpu_model = make(), make()
        gx, gt = _on(backend, gpu_model, x, t)
        # float(loss.data) inside step() copies the loss to the host: it synchronizes
        fns = {"gpu": partial(gpu_model.step, gx, gt), "cpu": partial(cpu_model.step, x, t)}
        best = side_by_side(fns, repeat=repeat)
        rows.append(
            {
                "group": f"GPU ({backend.name}, {name}) vs CPU (numpy), ms/step",
                "case": case,
                "zerograd": best["gpu"] * 1e3,
                "numpy": best["cpu"] * 1e3,
                "torch": None,
                "ratio": best["gpu"] / best["cpu"],
                "target": "faster than CPU",
                "note": "zerograd column: cupy; numpy column: zerograd on numpy",
            }
        )
    return rows
