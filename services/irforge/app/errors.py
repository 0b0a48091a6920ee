"""The use cases' own error: bad options or inputs found before any work."""

from __future__ import annotations


class UsageError(ValueError):
    """Bad options or inputs, found before any work: a command says so and exits 2; the Python
    API raises it (a ValueError)."""
