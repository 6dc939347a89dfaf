"""The package's shape holds: no import cycle among `migrate` modules, not even through an import
inside a function; no import runs up the floors (the rooms, each top-level module or package of
`migrate`, import one another without a cycle, so each stands on a floor above all it imports);
only the command layer imports the sandbox; the two writing programs (migrate/write/,
migrate/sync/) share only the journal (migrate/journal/); and no module past the house limit of
400 lines.

The graph is read from the source with `ast`, never by importing it: every `import` and
`from ... import` anywhere in a module (top level, functions, `if TYPE_CHECKING:` blocks) is an
edge, relative imports resolved against the module's package, and `from pkg import name` an edge
to the module `pkg.name` when there is one, else to `pkg`.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "migrate"
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolved(name: str, known: dict[str, Path]) -> str | None:
    """The module `name` is, or the longest known package or module it lies under."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The `migrate` modules `name` imports, wherever in it the import is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from pkg import module` imports the module; `from module import name` the module.
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                       for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "migrate" or target.startswith("migrate."):
                resolved = _resolved(target, known)
                if resolved is not None and resolved != name:
                    found.add(resolved)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as the modules along it (the first repeated at the end), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(edges, WHITE)
    for start in sorted(edges):
        if colour[start] != WHITE:
            continue
        # An explicit stack: (module, its imports still to visit); `path` is the grey chain.
        path, stack = [start], [(start, iter(sorted(edges[start])))]
        colour[start] = GREY
        while stack:
            node, todo = stack[-1]
            nxt = next(todo, None)
            if nxt is None:
                colour[node] = BLACK
                stack.pop()
                path.pop()
            elif colour.get(nxt, BLACK) == GREY:
                return path[path.index(nxt):] + [nxt]
            elif colour.get(nxt) == WHITE:
                colour[nxt] = GREY
                path.append(nxt)
                stack.append((nxt, iter(sorted(edges[nxt]))))
    return None


def test_the_cycle_finder_names_a_cycle_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_imports_are_read_everywhere_and_resolved(tmp_path):
    known = {"migrate": Path(), "migrate.x": Path(), "migrate.x.a": Path(), "migrate.x.b": Path(),
             "migrate.y": Path()}
    source = tmp_path / "a.py"
    source.write_text("from . import b\n"
                      "def f():\n"
                      "    from ..y import thing\n"
                      "    import migrate.x.b.inner\n")
    assert imports_of("migrate.x.a", source, known) == {"migrate.x.b", "migrate.y"}


def test_no_import_cycle_among_migrate_modules():
    cycle = find_cycle(graph())
    assert cycle is None, ("import cycle (function-local imports count): "
                           + " -> ".join(cycle))


def room(name: str) -> str:
    """The room a module is in: `migrate.zk.reader` is in `migrate.zk`, `migrate.cli` its own."""
    return ".".join(name.split(".")[:2])


def rooms(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph of rooms: an arrow where any module of one imports any module of another."""
    found: dict[str, set[str]] = {room(name): set() for name in edges}
    for name, targets in edges.items():
        found[room(name)] |= {room(t) for t in targets} - {room(name)}
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    """The module imports whose rooms' arrow lies on a cycle of rooms: each runs up a floor."""
    between = rooms(edges)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in between[todo.pop()] - seen:
                if nxt == goal:
                    return True
                seen.add(nxt)
                todo.append(nxt)
        return start == goal

    return sorted(f"{name} -> {target}" for name, targets in edges.items() for target in targets
                  if room(name) != room(target) and reaches(room(target), room(name)))


def test_an_arrow_up_is_named_by_its_imports():
    edges = {"migrate.pipeline": {"migrate.report.files"}, "migrate.report.files": set(),
             "migrate.report.ready": {"migrate.ready.rules"}, "migrate.ready.rules": set(),
             "migrate.ready.check": {"migrate.pipeline", "migrate.zk.reader"},
             "migrate.zk.reader": set()}
    assert upward(edges) == ["migrate.pipeline -> migrate.report.files",
                             "migrate.ready.check -> migrate.pipeline",
                             "migrate.report.ready -> migrate.ready.rules"]
    edges["migrate.pipeline"] = set()
    assert upward(edges) == []


def test_no_import_runs_up_the_floors():
    up = upward(graph())
    assert not up, ("imports that run up the floors (their rooms import each other, through "
                    f"any path): {up}")


def test_only_the_command_layer_imports_the_sandbox():
    # The sandbox is the demo-and-tests cluster: the product runs without it. Its JVM runtime is
    # migrate/jvm/; the `sandbox` command reaches it through the command layer, and the tests'
    # harnesses (migrate/testing/, which nothing the commands run imports) build on it.
    allowed = ("migrate.cli", "migrate.commands", "migrate.testing")
    edges = graph()
    into_sandbox = sorted(f"{name} -> {target}" for name, targets in edges.items()
                          for target in targets if _within(target, "migrate.sandbox")
                          and not _within(name, "migrate.sandbox")
                          and not any(_within(name, a) for a in allowed))
    assert not into_sandbox, f"product modules importing the sandbox: {into_sandbox}"
    into_testing = sorted(f"{name} -> {target}" for name, targets in edges.items()
                          for target in targets if _within(target, "migrate.testing")
                          and not _within(name, "migrate.testing"))
    assert not into_testing, f"modules importing the tests' harnesses: {into_testing}"


def test_the_jvm_runtime_stands_on_the_infrastructure_alone():
    # migrate/zk/datadir.py starts its private ZooKeeper with it, and the sandbox its cluster: it
    # imports no stage and nothing of the sandbox.
    allowed = ("migrate.jvm", "migrate.errors", "migrate.processes")
    beyond = sorted(f"{name} -> {target}" for name, targets in graph().items()
                    if _within(name, "migrate.jvm") for target in targets
                    if not any(_within(target, a) for a in allowed))
    assert not beyond, f"migrate/jvm/ importing more than the infrastructure: {beyond}"


def test_the_two_writing_programs_share_only_the_journal():
    # One package per program: the one-shot writer and the follower service import the journal
    # package, never each other, and the journal imports neither.
    apart = {"migrate.write": ("migrate.sync",), "migrate.sync": ("migrate.write",),
             "migrate.journal": ("migrate.write", "migrate.sync")}
    crossing = sorted(f"{name} -> {target}" for name, targets in graph().items()
                      for package, others in apart.items() if _within(name, package)
                      for target in targets if any(_within(target, o) for o in others))
    assert not crossing, f"imports across the programs' packages: {crossing}"


def test_the_kafka_rooms_wings_keep_their_direction():
    # migrate/kafka/: the wire (its own codecs) under the reader of __consumer_offsets (offsets_log/), the rooms
    # around them no more than fourteen modules, and none of it importing a stage above the reading floor.
    edges = graph()
    wire_up = sorted(f"{name} -> {target}" for name, targets in edges.items() if _within(name, "migrate.kafka.wire")
                     for target in targets if _within(target, "migrate.kafka.offsets_log"))
    assert not wire_up, f"the wire importing the reader above it: {wire_up}"
    above = ("migrate.zk", "migrate.diff", "migrate.write", "migrate.sync", "migrate.renew", "migrate.journal",
             "migrate.ready", "migrate.report", "migrate.pipeline", "migrate.commands", "migrate.cli",
             "migrate.sandbox", "migrate.testing")
    up = sorted(f"{name} -> {target}" for name, targets in edges.items() if _within(name, "migrate.kafka")
                for target in targets if any(_within(target, stage) for stage in above))
    assert not up, f"migrate/kafka/ importing a stage above it: {up}"
    top = sorted(path.name for path in (PACKAGE / "kafka").glob("*.py"))
    assert len(top) <= 14, f"migrate/kafka/ holds {len(top)} modules at its top: {top}"
    assert {path.name for path in (PACKAGE / "kafka").iterdir() if path.is_dir() and path.name != "__pycache__"} \
        == {"wire", "offsets_log"}


def test_every_exception_zk2kafka_defines_is_a_migrate_error():
    # One root (kazoo's exceptions.py, alembic's CommandError): the CLI maps each to its exit code.
    import importlib
    import inspect

    outside = []
    for name in modules():
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if (cls.__module__ == name and issubclass(cls, BaseException)
                    and not issubclass(cls, importlib.import_module("migrate.errors").MigrateError)):
                outside.append(f"{name}.{cls_name}")
    assert not outside, f"exceptions outside MigrateError: {outside}"


def test_each_package_names_its_modules_at_its_front_door():
    # A new engineer opens a package's __init__.py first: it names every module and wing in it.
    unnamed = {}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent == PACKAGE:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text("utf-8"))) or ""
        inside = [p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"]
        inside += [p.name for p in init.parent.iterdir() if (p / "__init__.py").is_file()]
        missing = sorted(name for name in inside if f"`{name}`" not in doc and f"`{name}/`" not in doc)
        if missing:
            unnamed[str(init.parent.relative_to(ROOT))] = missing
    assert not unnamed, f"modules a package's __init__.py does not name (as `name`): {unnamed}"


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_no_module_is_longer_than_the_house_limit():
    long = {str(path.relative_to(ROOT)): n for path in sorted(PACKAGE.rglob("*.py"))
            if (n := len(path.read_text("utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
