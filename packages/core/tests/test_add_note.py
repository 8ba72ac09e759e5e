"""zerograd.utils.add_note: hints on a user's error kept on every supported Python."""

import sys
import traceback
from types import SimpleNamespace

import pytest

import zerograd.utils
from zerograd.utils import add_note


def test_notes_are_added_in_order_as_python_does():
    exc = ValueError("the user's error")
    add_note(exc, "first")
    add_note(exc, "second")
    assert exc.__notes__ == ["first", "second"]
    assert str(exc) == "the user's error"  # the message itself is the user's, untouched


def test_on_python_3_10_which_has_no_add_note_the_notes_list_is_kept_all_the_same(monkeypatch):
    # 3.10 has no BaseException.add_note: the hints zerograd adds to a vjp's, a metric's or
    # a converter's error were dropped there (the callers tested hasattr(exc, "add_note"))
    monkeypatch.setattr(zerograd.utils, "sys", SimpleNamespace(version_info=(3, 10, 13)))
    exc = KeyError("k")
    add_note(exc, "first")
    add_note(exc, "second")
    assert exc.__notes__ == ["first", "second"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="3.10's traceback never prints notes")
def test_a_note_is_printed_under_the_traceback():
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        add_note(exc, "what to do about it")
        text = "".join(traceback.format_exception(exc))
    assert text.rstrip().endswith("RuntimeError: boom\nwhat to do about it")
