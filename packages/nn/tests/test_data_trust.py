"""Data sets, transforms and loaders as a DeZero or PyTorch user meets them: edge cases."""

import numpy as np
import pytest

from zerograd_nn import DataLoader
from zerograd_nn import datasets as D
from zerograd_nn import transforms as T


def test_transforms_take_the_scalars_a_dataset_item_is():
    # a 1-d dataset's items (labels, character ids) are numpy scalars: DeZero's AsType and
    # Normalize take them, so target_transform=ToInt() works on any dataset
    ds = D.Spiral(target_transform=T.ToInt("int32"))
    x, t = ds[0]
    assert t.dtype == np.int32 and int(t) == int(ds.label[0])
    text = D.TextCharDataset(text="hello", transform=T.ToFloat())
    assert text[1][0].dtype == np.float32 and float(text[1][0]) == 1.0
    assert float(T.Normalize(1.0, 2.0)(np.float32(3.0))) == 1.0
    assert float(T.Normalize(1.0, 2.0)(3.0)) == 1.0
    assert T.Flatten()(np.int64(7)).tolist() == [7]
    _, t = next(iter(DataLoader(ds, 4, shuffle=False)))
    assert t.dtype == np.int32 and t.tolist() == ds.label[:4].tolist()
    with pytest.raises(TypeError, match="expected a numeric array"):
        T.ToFloat()("3")


@pytest.mark.parametrize(
    ("transform", "got"),
    [(lambda v: None, "NoneType"), (lambda v: "abc", "str"), (lambda v: {"x": v}, "dict")],
)
def test_a_transform_returning_no_numbers_is_one_clear_error(transform, got):
    # a transform that forgets its return gave a batch of None (an object array) that
    # failed far away, in the model
    loader = DataLoader(D.Spiral(transform=transform), 4, shuffle=False)
    with pytest.raises(TypeError, match=rf"DataLoader: dataset\[0\] has x of type {got}, not "):
        next(iter(loader))
    assert loader.iteration == 0  # nothing served
    ok = DataLoader(D.Spiral(target_transform=lambda t: None if t < 0 else "label"), 4)
    with pytest.raises(TypeError, match=r"has t of type str, not a number or an array"):
        next(iter(ok))
