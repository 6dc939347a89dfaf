"""The tests keep their own house: what they share lives in tests/support, no test module imports another
or edits sys.path, tests/README.md maps every package to its tests, docs/testing.md says what every test
folder proves, and no file speaks of who built it or when."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from support.history import notes_in

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def python_files(under: Path) -> list[Path]:
    return sorted(p for p in under.rglob("*.py") if ".venv" not in p.parts)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_no_test_module_is_imported_by_another():
    found = []
    for path in python_files(TESTS):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{_rel(path)}:{node.lineno}: {name}" for name in names
                      if re.match(r"(tests\.|conftest$|test_)", name.split(".")[-1] if name.startswith("tests.")
                                  else name)]
    assert not found, f"import what they share from tests/support instead: {found}"


def test_no_test_edits_sys_path():
    found = []
    for path in python_files(TESTS):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                    and node.value.id == "sys"):
                found.append(f"{_rel(path)}:{node.lineno}")
    assert not found, f"sys.path touched (pytest's pythonpath setting puts tests/support on it): {found}"


def test_the_shared_helpers_are_defined_once():
    # One CLI runner, one wait_for, one free_port: a second definition is a helper to move to tests/support.
    defined: dict[str, list[str]] = {}
    for path in python_files(TESTS):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                defined.setdefault(node.name, []).append(_rel(path))
    twice = {name: where for name, where in defined.items()
             if len(where) > 1 and re.fullmatch(r"(zk2kafka\w*|run_cli|run_text|wait_for|free_port)", name)}
    assert not twice, twice


def test_the_tests_readme_maps_every_package_to_its_tests():
    readme = (TESTS / "README.md").read_text(encoding="utf-8")
    packages = sorted(p.parent.name for p in (ROOT / "migrate").glob("*/__init__.py"))
    missing = [name for name in packages if f"`migrate/{name}/`" not in readme]
    assert not missing, f"tests/README.md names no tests for: {missing}"
    named = set(re.findall(r"`((?:unit|integration|faults|compat|perf)/[\w/]+\.py)`", readme))
    gone = sorted(name for name in named if not (TESTS / name).exists())
    assert not gone, f"tests/README.md names files that do not exist: {gone}"


def test_docs_testing_says_what_every_test_folder_proves():
    page = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    folders = sorted(p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))
    missing = [name for name in folders if f"`tests/{name}/`" not in page]
    assert not missing, f"docs/testing.md does not describe: {missing}"


def test_no_file_speaks_of_who_built_it_or_when():
    # The pages have a test of their own (test_docs.py); this one reads every other file too.
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split()
    found = []
    for name in listed:
        path = ROOT / name
        if not path.is_file() or path.suffix in (".json", ".parquet", ".png"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{name}:{n}: {what}: {line[:100]}" for n, what, line in notes_in(text)]
    assert not found, "\n".join(found)
