"""What weight files and checkpoints store is what their loads read back: one table of
dtype kinds (``archives.STORED_KINDS``), checked at save, so a file is never written that
its load refuses, and the saves and loads of a kind agree."""

import re

import numpy as np
import pytest

from zerograd import Parameter
from zerograd_nn.archives import STORED_KINDS
from zerograd_nn.checkpoint import load_checkpoint, save_checkpoint
from zerograd_nn.layers import Layer
from zerograd_nn.weights import load_weights, save_weights


def one_param(data):
    layer = Layer()
    layer.w = Parameter(np.ones(len(data)))
    layer.w.data = np.asarray(data)
    return layer


UNSTORED = {
    "complex": np.array([1 + 2j, 3j]),
    "datetime": np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
    "timedelta": np.array([1, 2], dtype="timedelta64[s]"),
    "str": np.array(["ab", "c"]),
    "bytes": np.array([b"ab", b"c"]),
    "structured": np.zeros(2, dtype=[("a", "f4")]),
    "void": np.zeros(2, dtype="V4"),
    "object": np.array([1, None], dtype=object),
}


def test_the_table_is_bool_integers_and_floats():
    assert sorted(STORED_KINDS) == sorted("biuf")


@pytest.mark.parametrize("array", list(UNSTORED.values()), ids=list(UNSTORED))
def test_an_extra_array_the_load_would_refuse_is_refused_at_save_by_name(tmp_path, array):
    """It saved, then the load called the file's arrays "non-numeric"."""
    model = one_param([1.0, 2.0])
    with pytest.raises(
        TypeError,
        match=rf"^save_checkpoint: extra\['run'\]\[1\] has dtype {re.escape(str(array.dtype))}, "
        r"which weight files and checkpoints do not hold \(they hold bool, integer and float "
        r"arrays; .*\)\. Nothing was written\.$",
    ):
        save_checkpoint(tmp_path / "c.npz", model=model, extra={"run": [np.ones(1), array]})
    assert list(tmp_path.iterdir()) == []


def test_a_complex_parameter_is_refused_at_save_by_both_savers(tmp_path):
    model = one_param([1 + 1j, 2.0])
    with pytest.raises(
        TypeError, match=r"^save_weights: parameter 'w' has dtype complex128, which weight files"
    ):
        save_weights(model, tmp_path / "w.npz")
    with pytest.raises(
        TypeError, match=r"^save_checkpoint: the model's state\['w'\] has dtype complex128, "
    ):
        save_checkpoint(tmp_path / "c.npz", model=model)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", [bool, np.int8, np.uint16, np.float16])
def test_each_stored_kind_round_trips_through_every_save_and_load(tmp_path, dtype):
    """A bool Parameter: save_checkpoint wrote it, load_checkpoint (and load_state_dict)
    refused it as "expected a numeric array, got bool"."""
    data = np.array([1, 0, 1], dtype=dtype)
    src = one_param(data)
    save_weights(src, tmp_path / "w.npz")
    save_checkpoint(tmp_path / "c.npz", model=src)
    for load in (
        lambda m: load_weights(m, tmp_path / "w.npz"),
        lambda m: load_checkpoint(tmp_path / "c.npz", model=m),
        lambda m: m.load_state_dict(src.state_dict()),
    ):
        dst = one_param(np.zeros(3, dtype=dtype))
        load(dst)
        assert dst.w.data.dtype == dtype
        np.testing.assert_array_equal(dst.w.data, data)
