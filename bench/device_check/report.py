"""The device check's JSON: one file, rewritten atomically before and after every section.

Every process of the check (check.py's groups run one after another) loads the file, adds its
sections and rewrites it, so a process killed at its time cap leaves every finished section
and names the section it was in (``running``). A section whose needs are missing (no GPU, no
corpus, no FAISS; see ``environment.py``) is recorded under ``skipped`` with the reason, and
one that raises under ``errors`` with its traceback, while the next section still runs.
Each section's wall seconds and the Numba compile seconds inside them are recorded too.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def _compile_seconds() -> float:
    """Seconds this process has spent compiling Numba loops (0 when that cannot be read)."""
    try:
        from gpusimhash import _compile_time
    except Exception:  # noqa: BLE001 - a broken installation: the sections say why
        return 0.0
    return _compile_time.seconds()


class Report:
    """The check's results; ``section`` runs one section and rewrites the file."""

    def __init__(self, path: Path, fresh: bool = False) -> None:
        self.path = path
        self.result: dict[str, Any] = {}
        if path.exists() and not fresh:
            self.result = json.loads(path.read_text())
        for key in ("errors", "skipped", "section_seconds", "section_compile_seconds"):
            self.result.setdefault(key, {})
        self.result.setdefault("section_order", [])
        self.write()

    def write(self) -> None:
        """Write the JSON atomically (a temporary file beside it, then a rename)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        temporary.write_text(json.dumps(self.result, indent=2, default=str) + "\n")
        os.replace(temporary, self.path)

    def missing(self, needs: Iterable[str]) -> str | None:
        """Why the needs cannot be met (``available`` of the environment section), or None."""
        available = self.result.get("environment", {}).get("available", {})
        reasons = [
            f"needs {need}: {available.get(need, 'not probed')}"
            for need in needs
            if available.get(need) is not True
        ]
        return "; ".join(reasons) or None

    def section(self, name: str, function: Callable[[], Any], needs: Iterable[str] = ()) -> Any:
        """Run one section, store its value under ``name`` (or why not), rewrite the file."""
        self.result["section_order"].append(name)
        reason = self.missing(needs)
        if reason is not None:
            self.result["skipped"][name] = reason
            self.result[name] = {"skipped": reason}
            print(f"--- section {name}: skipped ({reason})", flush=True)
            self.write()
            return None
        print(f"--- section {name}", flush=True)
        self.result["running"] = name
        self.write()
        start, compiled = time.perf_counter(), _compile_seconds()
        value = None
        try:
            value = function()
            self.result[name] = value
        except Exception as error:  # noqa: BLE001 - recorded; the next section still runs
            self.result["errors"][name] = {
                "error": f"{type(error).__name__}: {error}",
                "traceback": traceback.format_exc(limit=8),
            }
            print(f"section {name} failed: {type(error).__name__}: {error}", flush=True)
        self.result["section_seconds"][name] = round(time.perf_counter() - start, 3)
        self.result["section_compile_seconds"][name] = round(_compile_seconds() - compiled, 3)
        del self.result["running"]
        self.write()
        return value
