"""report.md's advice as a reader copies it: each command line a sentence advises is a fenced code
block, rendered by a CommonMark renderer to exactly the command (no backslash before a pipe)."""

from __future__ import annotations

from markdown_it import MarkdownIt

from migrate.report.markdown_page import _advised


def _rendered(lines: list[str]) -> tuple[list[str], str]:
    """The fenced blocks' text and the rendered HTML of lines as report.md holds them (quoted)."""
    md = "\n".join(f"> {line}" if line else ">" for line in lines)
    tokens = MarkdownIt("commonmark").parse(md)
    return [t.content.rstrip("\n") for t in tokens if t.type == "fence"], MarkdownIt("commonmark").render(md)


def test_a_pipe_in_the_advice_copies_without_its_backslash():
    warning = ("**Warning:** 2 group(s) would hold offsets in Kafka with no consumer yet (a|b, c); keep the offsets"
               " alive with `zk2kafka sync --execute --renew-every 42h --exclude-group '(analytics|secured)'`")
    lines = _advised(warning)
    blocks, page = _rendered(lines)
    assert blocks == ["zk2kafka sync --execute --renew-every 42h --exclude-group '(analytics|secured)'"]
    assert "keep the offsets alive with the command below" in page
    assert "a|b, c" in page   # the prose's pipe, escaped for Markdown, reads as a pipe


def test_a_name_with_backticks_and_a_line_break_stays_one_command():
    # A selection pattern's backticks are escaped in a sentence (\`); a line break is in its shell quotes.
    command = "zk2kafka sync --execute --group 'x```y\nz<b>'"
    lines = _advised("keep them with `" + command.replace("`", "\\`") + "` or start `zk2kafka status`")
    blocks, page = _rendered(lines)
    assert blocks == [command, "zk2kafka status"]
    assert "keep them with command 1 below or start command 2 below" in page
    assert "<b>" not in page.replace("&lt;b&gt;", "")   # literal in its block, no raw HTML


def test_a_sentence_without_advice_is_one_escaped_line():
    assert _advised("Kafka deletes a|b <soon>") == ["Kafka deletes a\\|b &lt;soon&gt;"]
