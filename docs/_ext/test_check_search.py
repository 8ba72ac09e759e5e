"""The search-index checker splits text as Material's search does, and the configured
separator makes code identifiers words (the built site is checked by ``nox -s docs``)."""

from __future__ import annotations

import check_search
from check_search import misses, separator, words


def _index(sep: str) -> dict:
    code = "<p>Clear first:</p><pre><code>model.cleargrads()\noptimizer.zero_grad()</code></pre>"
    return {
        "config": {"separator": sep},
        "docs": [
            {"location": "from-pytorch.html", "title": "From PyTorch", "text": code},
            {"location": "from-pytorch.html#more", "title": "More", "text": "F.no_grad"},
            {"location": "other.html", "title": "Other", "text": "<p>nothing here</p>"},
        ],
    }


def test_mkdocs_default_separator_misses_identifiers_inside_code(monkeypatch):
    monkeypatch.setattr(check_search, "IDENTIFIERS", ("cleargrads", "zero_grad", "no_grad"))
    monkeypatch.setattr(check_search, "EXPECTED", {})
    assert misses(_index(r"[\s\-]+")) == [
        "cleargrads: on from-pytorch.html, but not one of its search words",
        "zero_grad: on from-pytorch.html, but not one of its search words",
        "no_grad: on from-pytorch.html, but not one of its search words",
    ]
    assert misses(_index(separator())) == []


def test_the_configured_separator_keeps_underscores_and_splits_calls():
    sep = separator()
    assert sep != r"[\s\-]+", "mkdocs.yml sets no search separator"
    assert words("<code>x.grad.data</code> F.softmax_cross_entropy(y, t) 1.5e-3", sep) == {
        "x",
        "grad",
        "data",
        "f",
        "softmax_cross_entropy",
        "y",
        "t",
        "1.5e",
        "3",
    }


def test_an_identifier_no_page_holds_is_reported(monkeypatch):
    monkeypatch.setattr(check_search, "IDENTIFIERS", ("to_gpu",))
    monkeypatch.setattr(check_search, "EXPECTED", {"to_gpu": {"other.html"}})
    assert misses(_index(separator())) == [
        "to_gpu: the search does not find it on other.html",
        "to_gpu: no page of the index holds it",
    ]
