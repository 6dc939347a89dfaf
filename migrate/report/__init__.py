"""Reporting (the last stage): renders what the other stages computed, never computes itself.

`files`: summary.json, rows.csv and reset-offsets.csv; `view`, `phrases`, `markdown_page`,
`html_page`: report.md and the self-contained report.html; `text`: each command's terminal text,
rendered from the data `--json` prints; `ready` and `ready_expiry`: ready-for-kraft's text and files
and its expiry lines; `renew`: what `renew` prints.
"""
