"""Records left out on request (``--skip-invalid``): how many, and the first few with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Skipped"]


@dataclass
class Skipped:
    """Collects the records a reader skips instead of raising (``read_batches(skipped=...)``).

    Attributes
    ----------
    count : int
        Records skipped.
    examples : list of str
        The first `LIMIT` reasons, each naming the file and line (or row).

    Examples
    --------
    >>> skipped = Skipped()
    >>> skipped.add(ValueError("docs.jsonl, line 3: not valid JSON (Expecting value)"))
    >>> skipped.count, skipped.examples
    (1, ['docs.jsonl, line 3: not valid JSON (Expecting value)'])
    """

    LIMIT = 20

    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, error: Exception) -> None:
        """Count a skipped record; keep its reason among the first `LIMIT`."""
        self.count += 1
        if len(self.examples) < self.LIMIT:
            self.examples.append(str(error))
