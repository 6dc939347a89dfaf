"""docs/cli.md is the page `migrate.cli_reference` renders from the CLI's option table, never typed by hand:
a flag, default, variable or help text changed in migrate/options.py or migrate/cli.py fails here until the
page is rendered again."""

from __future__ import annotations

import difflib

from migrate import cli_reference
from migrate.cli import COMMANDS, SANDBOX_ACTIONS
from migrate.options import OPTIONS


def test_docs_cli_md_is_current():
    page = cli_reference.PAGE.read_text(encoding="utf-8") if cli_reference.PAGE.exists() else ""
    rendered = cli_reference.render()
    if page != rendered:
        diff = "".join(list(difflib.unified_diff(page.splitlines(True), rendered.splitlines(True),
                                                 "docs/cli.md", "rendered now", n=1))[:40])
        raise AssertionError(f"docs/cli.md is stale: run `{cli_reference.REGENERATE}` (make cli-doc)\n{diff}")


def test_every_command_option_and_exit_code_is_on_the_page():
    page = cli_reference.render()
    for name in COMMANDS:
        assert f"\n## zk2kafka {name}\n" in page, name
    for action in SANDBOX_ACTIONS:
        assert f"\n### zk2kafka sandbox {action}\n" in page, action
    for opt in OPTIONS:
        assert f"`{opt.cli_flag}" in page, opt.cli_flag
        if opt.env_var:
            assert f"`{opt.env_var}`" in page, opt.env_var
    for code in ("0", "1", "2", "3", "130"):
        assert f"\n| {code} | " in page, f"exit code {code}"


def test_an_option_lists_its_default_and_sources():
    page = cli_reference.render()
    on_conflict = page.split("- `--on-conflict skip|zk|kafka|max|fail`:", 1)[1].split("\n- ", 1)[0]
    assert "Default `skip`." in on_conflict
    assert "`ZK2KAFKA_ON_CONFLICT`" in on_conflict and "`on-conflict` in the `--config` file" in on_conflict
    execute = page.split("- `--execute`:", 1)[1].split("\n- ", 1)[0]
    assert "Command line only." in execute and "ZK2KAFKA_EXECUTE" not in execute


def test_check_says_how_to_regenerate(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "cli.md"
    stale.write_text("# an old page\n", encoding="utf-8")
    monkeypatch.setattr(cli_reference, "PAGE", stale)
    monkeypatch.setattr(cli_reference, "ROOT", tmp_path)
    assert cli_reference.main(["--check"]) == 1
    assert cli_reference.REGENERATE in capsys.readouterr().err
    assert cli_reference.main(["--write"]) == 0
    assert cli_reference.main(["--check"]) == 0
