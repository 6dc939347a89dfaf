"""docker/Dockerfile and docker/compose.yaml agree with the CLI they package; no Docker engine needed.

The files are parsed, not built: the checks tie them to `pyproject.toml`, `migrate.cli`
and `migrate.options.OPTIONS`, so renaming the console script, an option, its
environment variable or the default state directory breaks this test, not a user's container.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from migrate import cli
from migrate.options import OPTIONS, OPTIONS_BY_NAME
from migrate.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
COMPOSE = ROOT / "docker" / "compose.yaml"
PYPROJECT = ROOT / "pyproject.toml"

TOOL_SERVICE = "zk2kafka"
# Commands that never write to ZooKeeper or Kafka (docs/design.md); migrate and rollback are dry runs without --execute.
READ_ONLY_COMMANDS = {"scan", "diff", "verify", "status"}
DRY_RUN_UNLESS_EXECUTE = {"migrate", "rollback"}


# --- a small Dockerfile parser -------------------------------------------------------------------------------

@dataclass
class Instruction:
    keyword: str  # upper case: FROM, RUN, ENV, ...
    args: str  # the rest of the logical line, continuations joined
    line: int  # where it starts, 1-based


@dataclass
class Stage:
    base: str  # image reference as written, variables substituted
    name: str | None
    index: int
    instructions: list[Instruction] = field(default_factory=list)
    args: dict[str, str] = field(default_factory=dict)  # ARGs in scope, with their defaults
    env: dict[str, str] = field(default_factory=dict)  # ENV set in this stage

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert found, f"stage {self.name or self.index} (FROM {self.base}) has no {keyword}"
        return found[-1]

    def substitute(self, text: str) -> str:
        return substitute(text, {**self.args, **self.env})


@dataclass
class Dockerfile:
    directives: dict[str, str]
    global_args: dict[str, str]
    stages: list[Stage]

    @property
    def final(self) -> Stage:
        assert self.stages, "no FROM in the Dockerfile"
        return self.stages[-1]

    def stage(self, ref: str) -> Stage | None:
        """The earlier stage `ref` names (by `AS name` or index), or None for an external image."""
        for s in self.stages:
            if s.name == ref.lower() or str(s.index) == ref:
                return s
        return None

    def root_image(self, stage: Stage) -> str:
        """The external image a stage ultimately builds on, following `FROM <earlier stage>`."""
        seen = set()
        while (parent := self.stage(stage.base)) is not None and parent.index < stage.index:
            assert parent.index not in seen
            seen.add(parent.index)
            stage = parent
        return stage.base


_VAR = re.compile(r"""\$(?:
    \{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::(?P<op>[-+])(?P<word>[^}]*))?\}  # ${NAME}, ${NAME:-word}, ${NAME:+word}
    | (?P<bare>[A-Za-z_][A-Za-z0-9_]*)                                       # $NAME
)""", re.VERBOSE)


def substitute(text: str, variables: dict[str, str]) -> str:
    """Dockerfile variable substitution: $NAME, ${NAME}, ${NAME:-word}, ${NAME:+word}; unknown names stay as written."""
    def repl(m: re.Match) -> str:
        name = m.group("braced") or m.group("bare")
        value = variables.get(name)
        if m.group("op") == "-":
            return value if value else m.group("word")
        if m.group("op") == "+":
            return m.group("word") if value else ""
        return value if value is not None else m.group(0)
    return _VAR.sub(repl, text)


def _assignments(args: str, keyword: str) -> dict[str, str | None]:
    """`ARG a=1 b` / `ENV a=1 b="x y"` / legacy `ENV key value`."""
    words = shlex.split(args, posix=True)
    if keyword == "ENV" and words and "=" not in words[0]:
        return {words[0]: args.split(None, 1)[1].strip() if len(words) > 1 else ""}
    out: dict[str, str | None] = {}
    for word in words:
        key, sep, value = word.partition("=")
        out[key] = value if sep else None
    return out


def parse_dockerfile(text: str) -> Dockerfile:
    lines = text.splitlines()
    directives: dict[str, str] = {}
    i = 0
    # Parser directives (`# syntax=...`, `# escape=...`) only count before anything else.
    while i < len(lines) and (m := re.match(r"^#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$", lines[i])):
        directives[m.group(1).lower()] = m.group(2)
        i += 1
    escape = directives.get("escape", "\\")

    instructions: list[Instruction] = []
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(lines[i:], start=i + 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buffer):
            continue  # comments (also inside a continued instruction) and blank lines
        if not buffer:
            start = number
        if stripped.endswith(escape):
            buffer.append(stripped[: -len(escape)])
            continue
        buffer.append(stripped)
        logical = " ".join(part.strip() for part in buffer if part.strip())
        buffer = []
        keyword, _, args = logical.partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
    assert not buffer, f"the Dockerfile ends inside a continued instruction (line {start})"

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            words = [w for w in ins.args.split() if not w.startswith("--")]  # drop --platform=...
            assert len(words) in (1, 3) and (len(words) == 1 or words[1].upper() == "AS"), \
                f"line {ins.line}: cannot read FROM {ins.args!r}"
            base = substitute(words[0], global_args)
            stages.append(Stage(base, words[2].lower() if len(words) == 3 else None, len(stages)))
        elif not stages:
            assert ins.keyword == "ARG", f"line {ins.line}: only ARG may precede the first FROM, not {ins.keyword}"
            for key, value in _assignments(ins.args, "ARG").items():
                global_args[key] = value or ""
        else:
            stage = stages[-1]
            stage.instructions.append(ins)
            if ins.keyword == "ARG":
                for key, value in _assignments(ins.args, "ARG").items():
                    stage.args[key] = value if value is not None else global_args.get(key, "")
            elif ins.keyword == "ENV":
                # All values of one ENV see the variables as they were before it, like Docker does.
                before = {**stage.args, **stage.env}
                for key, value in _assignments(ins.args, "ENV").items():
                    stage.env[key] = substitute(value or "", before)
    return Dockerfile(directives, global_args, stages)


def exec_form(ins: Instruction) -> list[str]:
    """The JSON (exec) form of ENTRYPOINT/CMD/VOLUME; fails on the shell form."""
    try:
        value = json.loads(ins.args)
    except json.JSONDecodeError:
        pytest.fail(f"line {ins.line}: {ins.keyword} {ins.args} is not in exec (JSON array) form")
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), ins.args
    return value


# --- fixtures --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def pyproject() -> dict:
    with PYPROJECT.open("rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def compose() -> dict:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict) and isinstance(data.get("services"), dict), "compose.yaml has no services"
    return data


@pytest.fixture(scope="module")
def services(compose) -> dict[str, dict]:
    return compose["services"]


@pytest.fixture(scope="module")
def tool(services) -> dict:
    assert TOOL_SERVICE in services, f"compose.yaml has no {TOOL_SERVICE!r} service"
    return services[TOOL_SERVICE]


@pytest.fixture(scope="module")
def kafka_name(services) -> str:
    brokers = [name for name, s in services.items() if "KAFKA_ZOOKEEPER_CONNECT" in environment(s)]
    assert len(brokers) == 1, f"expected one ZooKeeper-mode broker (KAFKA_ZOOKEEPER_CONNECT), found {brokers}"
    return brokers[0]


def environment(service: dict) -> dict[str, str | None]:
    """A service's environment, from the mapping or the list form; None for a pass-through `- NAME`."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        pairs = [item.partition("=") for item in env]
        return {key: (value if sep else None) for key, sep, value in pairs}
    return {key: (None if value is None else str(value)) for key, value in env.items()}


def setting(service: dict, key: str) -> str:
    """A variable the service must set, with a clear failure when it does not."""
    value = environment(service).get(key)
    assert value, f"the service does not set {key}"
    return value


def hostnames(services: dict, name: str) -> set[str]:
    """Names under which service `name` is reachable from other containers on the default network."""
    service = services[name]
    names = {name}
    if service.get("hostname"):
        names.add(service["hostname"])
    if service.get("container_name"):
        names.add(service["container_name"])
    networks = service.get("networks")
    if isinstance(networks, dict):
        for net in networks.values():
            names.update((net or {}).get("aliases", []))
    return names


def reachable_hosts(services: dict) -> dict[str, str]:
    """host name -> service, for every service."""
    return {host: name for name in services for host in hostnames(services, name)}


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """`NAME://host:port,...` -> {NAME: (host, port)}."""
    out = {}
    for item in value.split(","):
        m = re.fullmatch(r"\s*([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:]*):(\d+)\s*", item)
        assert m, f"cannot read listener {item!r}"
        out[m.group(1)] = (m.group(2), int(m.group(3)))
    return out


def host_ports(value: str) -> list[tuple[str, int]]:
    out = []
    for item in value.split(","):
        host, _, port = item.strip().rpartition(":")
        assert host and port.isdigit(), f"{item!r} is not host:port"
        out.append((host, int(port)))
    return out


def volume_targets(service: dict) -> dict[str, str | None]:
    """container path -> source (named volume or host path; None for anonymous), short and long syntax."""
    out: dict[str, str | None] = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            out[volume["target"]] = volume.get("source")
        else:
            parts = volume.split(":")
            if len(parts) == 1:
                out[parts[0]] = None
            else:
                out[parts[1]] = parts[0]
    return out


# --- the parser itself ----------------------------------------------------------------------------------------

def test_the_dockerfile_parser_reads_continuations_comments_stages_and_variables():
    parsed = parse_dockerfile(
        "# syntax=docker/dockerfile:1\n"
        "ARG BASE=python:3.12-slim\n"
        "FROM ${BASE} AS build\n"
        "RUN echo one \\\n"
        "# a comment inside a continuation is dropped\n"
        "    && echo two\n"
        "\n"
        "FROM --platform=$BUILDPLATFORM build\n"
        "ARG BASE\n"
        "ARG UID=42\n"
        "ENV HOME_DIR=/home/u PATH=/opt/bin:$PATH\n"
        "ENV LEGACY some value\n"
        "USER ${UID}\n"
        'ENTRYPOINT ["tool", "--flag"]\n'
    )
    assert parsed.directives == {"syntax": "docker/dockerfile:1"}
    assert [(s.base, s.name) for s in parsed.stages] == [("python:3.12-slim", "build"), ("build", None)]
    assert parsed.stages[0].instructions == [Instruction("RUN", "echo one && echo two", 4)]
    final = parsed.final
    assert parsed.root_image(final) == "python:3.12-slim"
    assert final.args == {"BASE": "python:3.12-slim", "UID": "42"}
    assert final.env == {"HOME_DIR": "/home/u", "PATH": "/opt/bin:$PATH", "LEGACY": "some value"}
    assert final.substitute(final.last("USER").args) == "42"
    assert exec_form(final.last("ENTRYPOINT")) == ["tool", "--flag"]
    with pytest.raises(AssertionError, match="ends inside a continued instruction"):
        parse_dockerfile("FROM x\nRUN a \\\n")


# --- Dockerfile vs. the CLI -----------------------------------------------------------------------------------

def test_entrypoint_is_the_console_script_of_the_cli(dockerfile, pyproject):
    entrypoint = exec_form(dockerfile.final.last("ENTRYPOINT"))
    assert len(entrypoint) == 1, f"ENTRYPOINT {entrypoint} should be the console script alone"
    script = entrypoint[0]
    scripts = pyproject["project"].get("scripts", {})
    assert script in scripts, f"ENTRYPOINT {script!r} is not a console script in pyproject.toml: {sorted(scripts)}"
    assert scripts[script] == "migrate.cli:main"
    assert cli.build_parser().prog == script, "usage lines would name a different program than the image runs"


def test_default_cmd_is_a_working_invocation(dockerfile, capsys):
    cmd = exec_form(dockerfile.final.last("CMD"))
    assert cli.main(cmd) == 0, f"`docker run <image>` would run `zk2kafka {' '.join(cmd)}` and fail"
    assert "usage: zk2kafka" in capsys.readouterr().out


def test_runtime_base_image_is_a_python_that_pyproject_allows(dockerfile, pyproject):
    image = dockerfile.root_image(dockerfile.final)
    m = re.fullmatch(r"(?:docker\.io/)?(?:library/)?python:(\d+)\.(\d+)(?:\.\d+)?(?:-[\w.-]+)?(?:@sha256:[0-9a-f]+)?",
                     image)
    assert m, f"final stage is FROM {image!r}, not an official python:X.Y image"
    version = Version(f"{m.group(1)}.{m.group(2)}")
    requires = SpecifierSet(pyproject["project"]["requires-python"])
    assert requires.contains(version), f"FROM {image} runs Python {version}; pyproject requires {requires}"


def test_wheels_come_from_a_stage_on_the_same_python(dockerfile):
    """Binary wheels (pyarrow) built for one Python do not install on another."""
    final = dockerfile.final
    sources = {m.group(1) for ins in final.instructions if ins.keyword in ("COPY", "RUN")
               for m in re.finditer(r"--(?:mount=[^ ]*\bfrom|from)=([^ ,]+)", ins.args)}
    assert sources, "the final stage neither copies nor mounts anything from the build stage"
    for ref in sources:
        stage = dockerfile.stage(final.substitute(ref))
        assert stage is not None, f"--from={ref} is not a stage of this Dockerfile"
        assert dockerfile.root_image(stage) == dockerfile.root_image(final)


def test_runtime_installs_java_17_leanly_and_sets_java_home(dockerfile):
    final = dockerfile.final
    runs = [final.substitute(r.args) for r in final.all("RUN")]
    installs = [r for r in runs if re.search(r"apt-get\s+install\b[^;&|]*\bopenjdk-17-jre(-headless)?\b", r)]
    assert installs, "the final stage installs no openjdk-17-jre(-headless); Spark cannot start without Java"
    for run in (r for r in runs if "apt-get" in r and "install" in r):
        assert "--no-install-recommends" in run, run
        assert re.search(r"rm -rf /var/lib/apt/lists(/\*)?", run), f"apt lists left in the layer: {run}"
    java_home = final.env.get("JAVA_HOME", "")
    assert re.search(r"/usr/lib/jvm/java-17\b", java_home), f"JAVA_HOME={java_home!r} is not a Java 17 home"
    for run in (r for r in runs if re.search(r"\bpip3? install\b", r)):
        assert "--no-cache-dir" in run or final.env.get("PIP_NO_CACHE_DIR") in ("1", "true", "yes", "on"), run


def test_runtime_user_is_not_root_and_exists(dockerfile):
    final = dockerfile.final
    user = final.substitute(final.last("USER").args).partition(":")[0]
    assert user not in ("", "root", "0"), f"the image runs as {user!r}"
    creates = " ".join(final.substitute(r.args) for r in final.all("RUN") if "useradd" in r.args or "adduser" in r.args)
    if user.isdigit():
        assert re.search(rf"(--uid|-u)[ =]\"?{user}\b", creates), f"no user with uid {user} is created in the image"
    else:
        assert re.search(rf"\b{re.escape(user)}\s*(;|&&|$)", creates), f"user {user!r} is not created in the image"


def test_volume_is_the_default_state_dir_under_the_workdir(dockerfile):
    final = dockerfile.final
    workdir = PurePosixPath(final.substitute(final.last("WORKDIR").args))
    volume_args = final.last("VOLUME")
    volumes = exec_form(volume_args) if volume_args.args.startswith("[") else volume_args.args.split()
    default = OPTIONS_BY_NAME["state_dir"].default
    assert not Path(default).is_absolute()
    assert [final.substitute(v) for v in volumes] == [str(workdir / PurePosixPath(default))], \
        f"VOLUME {volumes} is not where the default --state-dir ({default}) lands under WORKDIR {workdir}"


# --- compose.yaml vs. the CLI, the Dockerfile and itself -------------------------------------------------------

def test_every_zk2kafka_variable_in_compose_is_an_option(services):
    known = {o.env_var for o in OPTIONS if o.env_var}
    used = {(name, key) for name, s in services.items() for key in environment(s) if key.startswith("ZK2KAFKA_")}
    assert used, "no service sets a ZK2KAFKA_* variable"
    unknown = sorted(f"{name}: {key}" for name, key in used if key not in known)
    assert not unknown, f"not the env_var of any option in migrate.options.OPTIONS: {unknown}"


def test_tool_environment_passes_the_tools_own_validation(tool):
    env = {k: v for k, v in environment(tool).items() if k.startswith("ZK2KAFKA_") and v is not None}
    settings = load_settings({}, environ=env)
    assert settings.zookeeper == setting(tool, "ZK2KAFKA_ZOOKEEPER")
    assert settings.bootstrap_server == setting(tool, "ZK2KAFKA_BOOTSTRAP_SERVER")


def test_default_command_parses_and_never_writes(tool):
    command = tool.get("command")
    assert command, f"the {TOOL_SERVICE} service has no default command"
    argv = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
    assert argv[0] in cli.COMMANDS, f"{argv[0]!r} is not a zk2kafka command: {sorted(cli.COMMANDS)}"
    try:
        namespace = cli.build_parser().parse_args(argv)
    except SystemExit as e:
        pytest.fail(f"`zk2kafka {' '.join(argv)}` does not parse (exit {e.code})")
    dry = namespace.command in READ_ONLY_COMMANDS or (
        namespace.command in DRY_RUN_UNLESS_EXECUTE and not getattr(namespace, "execute", False))
    assert dry, f"the sandbox's default `zk2kafka {' '.join(argv)}` would write"


def test_tool_reads_the_zookeeper_tree_the_broker_uses(services, tool, kafka_name):
    broker_zk = setting(services[kafka_name], "KAFKA_ZOOKEEPER_CONNECT")
    tool_zk = setting(tool, "ZK2KAFKA_ZOOKEEPER")
    assert tool_zk == broker_zk, (
        f"the broker keeps its data under {broker_zk!r} but the tool reads {tool_zk!r}: "
        "a different chroot means the tool sees other /consumers than the cluster's")
    hosts, _, chroot = tool_zk.partition("/")
    assert chroot, "the sandbox should use a chroot, like production clusters"
    where = reachable_hosts(services)
    for host, _port in host_ports(hosts):
        assert host in where, f"ZooKeeper host {host!r} is not a service of the compose file"


def test_tool_bootstraps_from_a_listener_the_broker_advertises(services, tool, kafka_name):
    env = environment(services[kafka_name])
    advertised = listeners(setting(services[kafka_name], "KAFKA_ADVERTISED_LISTENERS"))
    bound = listeners(env.get("KAFKA_LISTENERS") or env["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(item.split(":") for item in env.get("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "").split(",") if item)
    by_address = {address: name for name, address in advertised.items()}
    where = reachable_hosts(services)
    for address in host_ports(setting(tool, "ZK2KAFKA_BOOTSTRAP_SERVER")):
        assert address in by_address, f"bootstrap {address} is not advertised by {kafka_name}: {advertised}"
        name = by_address[address]
        assert name in bound and bound[name][1] == address[1], f"listener {name} is advertised but not bound"
        assert where.get(address[0]) == kafka_name, f"{address[0]!r} does not reach {kafka_name} from a container"
        # The tool gets no --command-config in the sandbox, so its listener must be plaintext.
        assert protocols.get(name, name) == "PLAINTEXT", f"listener {name} is {protocols.get(name)}"


def test_single_broker_internal_topics_have_one_replica(services, kafka_name):
    env = environment(services[kafka_name])
    assert env.get("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR") == "1", "__consumer_offsets cannot be created"
    for key, value in env.items():
        if key.endswith("_REPLICATION_FACTOR") or key.endswith("_MIN_ISR"):
            assert value == "1", f"{key}={value} on a single broker"


def test_depends_on_targets_exist_and_are_waited_for_healthy(services, tool, kafka_name):
    for name, service in services.items():
        depends = service.get("depends_on") or {}
        if isinstance(depends, list):  # the short form only waits for the container to start
            depends = {target: {"condition": "service_started"} for target in depends}
        for target, spec in depends.items():
            assert target in services, f"{name} depends on {target!r}, which is not a service"
            assert (spec or {}).get("condition") == "service_healthy", \
                f"{name} does not wait for {target} to be healthy"
            check = services[target].get("healthcheck") or {}
            test = check.get("test")
            assert test and not check.get("disable") and test not in (["NONE"], "NONE"), \
                f"{target} has no healthcheck, so `service_healthy` would never be reached"
    where = reachable_hosts(services)
    zookeepers = {where.get(host) for host, _ in host_ports(setting(tool, "ZK2KAFKA_ZOOKEEPER").partition("/")[0])}
    assert zookeepers | {kafka_name} <= set(tool.get("depends_on") or ()), f"{TOOL_SERVICE} must wait for its cluster"


def test_tool_is_built_from_this_dockerfile_and_keeps_its_entrypoint(tool, dockerfile):
    build = tool.get("build")
    assert isinstance(build, dict), f"{TOOL_SERVICE} must be built from docker/Dockerfile"
    context = (COMPOSE.parent / build.get("context", ".")).resolve()
    assert context == ROOT, f"build context {context} is not the repository root"
    assert (context / build.get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE.resolve()
    if "entrypoint" in tool:
        assert tool["entrypoint"] == exec_form(dockerfile.final.last("ENTRYPOINT"))


def test_state_volume_is_where_the_tool_writes(compose, tool, dockerfile):
    final = dockerfile.final
    workdir = PurePosixPath(tool.get("working_dir") or final.substitute(final.last("WORKDIR").args))
    state_dir = PurePosixPath(environment(tool).get("ZK2KAFKA_STATE_DIR") or str(OPTIONS_BY_NAME["state_dir"].default))
    state_dir = state_dir if state_dir.is_absolute() else workdir / state_dir
    volume_args = final.last("VOLUME")
    image_volumes = exec_form(volume_args) if volume_args.args.startswith("[") else volume_args.args.split()
    assert str(state_dir) in image_volumes, f"the tool writes to {state_dir}, the image's VOLUME is {image_volumes}"
    targets = volume_targets(tool)
    assert str(state_dir) in targets, f"{state_dir} is not mounted in {TOOL_SERVICE}: {sorted(targets)}"
    source = targets[str(state_dir)]
    assert source and not source.startswith((".", "/", "~")), "the state should live in a named volume"
    assert source in (compose.get("volumes") or {}), f"volume {source!r} is not declared at the top level"
