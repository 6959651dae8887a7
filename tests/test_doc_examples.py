"""Every Python code block of the README and of the documentation pages runs.

The blocks of one page run in order, in one namespace, in a fresh working folder (the examples
save indexes and write files there).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


def test_the_readme_and_the_guides_have_python_examples():
    assert python_blocks(ROOT / "README.md")
    for guide in ("getting-started", "dedup", "search-index", "distributed", "fingerprint"):
        assert python_blocks(ROOT / "docs" / f"{guide}.md"), guide


def test_a_failing_block_is_reported():
    with pytest.raises(AssertionError):
        run_blocks(["x = 1", "assert x == 2"], "example")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_blocks(python_blocks(page), page.relative_to(ROOT).as_posix())


def run_blocks(blocks: list[str], name: str) -> None:
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks):
        code = compile(block, f"{name} python block {number}", "exec")
        exec(code, namespace)  # noqa: S102 - running the examples is the test
