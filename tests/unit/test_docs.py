"""The README and the pages under docs/ stay true to the CLI and to each other: every command has its example in
the README, every command line shown parses with the real parser, every config file shown is one zk2kafka takes,
every link to a heading finds it, and the pages speak of the project, not of who measured what when.

docs/design.md (the contract) has keepers of its own and is read here only as a link target; docs/cli.md is
checked by test_cli_reference.py, and docs/testing.md's folder list by test_test_layout.py."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from migrate.cli import COMMANDS, build_parser
from migrate.settings import _read_toml

from support.history import notes_in

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
KEPT_ELSEWHERE = {"design.md", "cli.md"}
PAGES = [README] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in KEPT_ELSEWHERE)
RUNBOOKS = sorted((ROOT / "runbooks").glob("*.md"))
README_MAX_LINES = 250


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def test_the_readme_stays_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (f"README.md has {lines} lines (at most {README_MAX_LINES}): "
                                       "move the detail to a page under docs/ and link it")


def _zk2kafka_argvs(code: str) -> list[list[str]]:
    """The arguments after each `zk2kafka` word of a shell block, `$(...)` looked into; values from the
    shell or a placeholder stand for any string."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        found += _argvs_of_words(shlex.split(line, comments=True))
    return found


def _argvs_of_words(words: list[str]) -> list[list[str]]:
    found = []
    for i, word in enumerate(words):
        if "$(" in word:
            found += _argvs_of_words(shlex.split(word.split("$(", 1)[1].rsplit(")", 1)[0]))
        elif word == "zk2kafka" or word.endswith("/zk2kafka"):
            args = []
            for arg in words[i + 1:]:
                if re.fullmatch(r"[();<>|&]+|&&|\|\|", arg):
                    break
                args.append("VALUE" if "$" in arg or re.search(r"<[a-z][a-z0-9-]*>", arg) else arg)
            found.append(args)
    return found


def _parses(argv: list[str]) -> str | None:
    """None when the real parser takes argv, else what it said."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(argv)
        except SystemExit as e:
            if e.code not in (0, None):
                return err.getvalue()
    return None


def test_the_readme_gives_every_command_an_example_that_parses():
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `([a-z-]+)` \|[^|]*\| `([^`]+)` \|", section, re.MULTILINE)}
    assert set(rows) == set(COMMANDS), f"README's command table: missing {set(COMMANDS) - set(rows)}, " \
                                       f"unknown {set(rows) - set(COMMANDS)}"
    for name, example in rows.items():
        argvs = _zk2kafka_argvs(example)
        assert argvs and argvs[0][:1] == name.split(), f"README: the example of `{name}` is `{example}`"
        said = _parses(argvs[0])
        assert said is None, f"README: `{example}` does not parse:\n{said}"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_command_line_shown_parses_with_the_real_cli(page: Path):
    for code in _blocks(page.read_text(encoding="utf-8"), "sh"):
        for argv in _zk2kafka_argvs(code):
            assert argv, f"{_rel(page)}: `zk2kafka` without a command in:\n{code}"
            said = _parses(argv)
            assert said is None, f"{_rel(page)}: `zk2kafka {' '.join(argv)}` does not parse:\n{said}"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_config_file_shown_is_one_zk2kafka_takes(page: Path, tmp_path: Path):
    for n, code in enumerate(_blocks(page.read_text(encoding="utf-8"), "toml")):
        path = tmp_path / f"{n}.toml"
        path.write_text(code, encoding="utf-8")
        _read_toml(path)   # raises ConfigError naming an unknown or command-line-only key


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


@pytest.mark.parametrize("page", PAGES + [ROOT / "docs" / "cli.md"], ids=_rel)
def test_every_link_to_a_heading_finds_it(page: Path):
    bad = []
    for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", page.read_text(encoding="utf-8")):
        path = (page.parent / target).resolve() if target else page
        if path.suffix == ".md" and path.exists() and anchor not in _anchors(path):
            bad.append(f"{target}#{anchor}")
    assert not bad, f"{_rel(page)}: links to headings that do not exist: {bad}"


@pytest.mark.parametrize("page", PAGES + RUNBOOKS, ids=_rel)
def test_the_pages_speak_of_the_project_not_of_its_history(page: Path):
    found = [f"{_rel(page)}:{n}: {what}: {line[:100]}" for n, what, line in notes_in(page.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)
