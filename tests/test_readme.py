"""Every Python code block of the README runs, in order, in one namespace."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(
    r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE
)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples save an index in the working folder
    namespace: dict[str, object] = {}
    for number, block in enumerate(BLOCKS):
        code = compile(block, f"README.md python block {number}", "exec")
        exec(code, namespace)  # noqa: S102 - running the README is the test
