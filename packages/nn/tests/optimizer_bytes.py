"""The bytes an optimizer's update writes, for tests that compare two updates bit for bit."""

from __future__ import annotations

import numpy as np


def state_bytes(opt, params):
    """Each parameter's optimizer state (its moments, velocities) as bytes, by name."""
    out = []
    for p in params:
        st = opt._state.get(p) or {}
        out.append({k: np.asarray(a).tobytes() for k, a in sorted(st.items())})
    return out


def snapshot(opt, params):
    """``(the parameters' bytes, their state's bytes)``: what an update changed."""
    return [np.asarray(p.data).tobytes() for p in params], state_bytes(opt, params)
