"""A gallery run passes only when its example exits cleanly, prints what it must and writes
real images; a page's marker becomes the command and its output."""

from __future__ import annotations

from pathlib import Path

import gallery
import pytest
from gallery import Run, execute
from mkdocs.exceptions import PluginError

PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
SCRIPT = """import sys
from pathlib import Path
out = Path(sys.argv[2])
(out / "curve.png").write_bytes({png!r})
print("accuracy 97.0%, wrote", out / "curve.png")
sys.exit({status})
"""


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "examples"
    folder.mkdir()
    (folder / "good.py").write_text(SCRIPT.format(png=PNG, status=0))
    (folder / "bad.py").write_text(SCRIPT.format(png=b"not an image", status=3))
    monkeypatch.setattr(gallery, "EXAMPLES", folder)
    return folder


def test_a_good_run_returns_its_output_with_the_folder_named_as_on_the_page(
    examples: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run = Run("good", "good.py", images=("curve.png",), expect=r"accuracy 9\d\.\d%")
    assert execute(run, out) == "accuracy 97.0%, wrote out/good/curve.png\n"


def test_a_bad_run_fails_the_build_with_every_problem(examples: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run = Run("bad", "bad.py", images=("curve.png", "other.svg"), expect=r"accuracy 99")
    with pytest.raises(PluginError) as failed:
        execute(run, out)
    assert str(failed.value).splitlines()[0] == (
        "gallery: python examples/bad.py --out OUT: exit status 3; its output does not match "
        "'accuracy 99'; curve.png is not a PNG or SVG image; other.svg is not a PNG or SVG image"
    )


def test_the_marker_becomes_the_command_and_what_it_printed(monkeypatch) -> None:
    monkeypatch.setitem(gallery._printed, "spiral", "epoch 1\nfinal 97%\n")
    page = "# Gallery\n\n<!-- gallery: spiral -->\n\nafter\n"
    assert gallery.on_page_markdown(page) == (
        "# Gallery\n\n"
        '```text title="python examples/spiral.py --out out/spiral"\nepoch 1\nfinal 97%\n```'
        "\n\nafter\n"
    )
    with pytest.raises(PluginError, match="gallery: no run named 'nothing'"):
        gallery.on_page_markdown("<!-- gallery: nothing -->\n")


def test_every_run_names_an_example_that_exists() -> None:
    assert [r.script for r in gallery.RUNS if not (gallery.EXAMPLES / r.script).is_file()] == []
