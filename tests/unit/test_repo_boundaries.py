"""The repository keeps to its bounds: it links nothing outside itself (the contract is docs/design.md), and
what zk2kafka runs does not import the test harnesses."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Spelled in two parts so this file does not match itself.
OUTSIDE = re.compile(r"\.\./" + r"shared|shared/" + r"DESIGN")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / name for name in out.splitlines() if (ROOT / name).is_file()]


def test_no_tracked_file_points_outside_the_repo():
    offenders = []
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders += [f"{path.relative_to(ROOT)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                      if OUTSIDE.search(line)]
    assert not offenders, f"links outside the repository (use docs/design.md): {offenders}"


def test_markdown_links_to_files_resolve_inside_the_repo():
    bad = []
    for path in tracked_files():
        if path.suffix != ".md":
            continue
        for target in MD_LINK.findall(path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):   # http:, https:, mailto: are not files
                continue
            resolved = (path.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                bad.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not bad, f"Markdown links that leave the repository or name no file: {bad}"


def test_the_readme_points_at_the_contract_in_the_repo():
    assert "](docs/design.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert (ROOT / "docs" / "design.md").is_file()


def test_nothing_zk2kafka_runs_imports_the_test_harnesses():
    # migrate/testing/ serves the tests only (kazoo's way): the shipped commands must not depend on it.
    package = ROOT / "migrate"
    users = [str(p.relative_to(ROOT)) for p in package.rglob("*.py")
             if "testing" not in p.relative_to(package).parts[:1] and "migrate.testing" in p.read_text("utf-8")]
    assert not users, f"modules outside migrate/testing/ import it: {users}"
