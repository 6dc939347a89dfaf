"""Text that belongs to the history (git), not to the repository: who measured what, where and when."""

from __future__ import annotations

import re

NOTEBOOK = [
    (re.compile(r"\bsessions? \d+\b", re.I), "a session number"),
    (re.compile(r"\b(another|other|this) session'?s?\b(?! (expir|of its own))", re.I), "a working session"),
    (re.compile(r"\bissues? #?\d+\b|(?<![\w&/])#\d+\b", re.I), "an issue number"),
    (re.compile(r"\b[Mm]achines? \(?[A-Z]\)?(?![\w-])"), "a machine letter"),
    (re.compile(r"`[0-9a-f]{7,10}`"), "a commit hash"),
]


def notes_in(text: str) -> list[tuple[int, str, str]]:
    """(line number, what it is, the line) for each line of `text` that speaks of the history."""
    return [(n, what, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            for pattern, what in NOTEBOOK if pattern.search(line)]
