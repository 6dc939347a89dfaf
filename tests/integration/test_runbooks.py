"""The runbooks, run: every ```sh block of every runbooks/*.md page, in order, on a fresh sandbox.

For each page (runbooks/README.md is the index, not a page) the harness starts a sandbox
with the real CLI (`zk2kafka sandbox up`, plus `--kraft` when the page asks for it), seeds
it, fills in the few documented placeholders, and runs the page's ```sh blocks in ONE bash
process, so a variable set in one block is there in the next. Each block's exit code,
stdout and stderr are kept apart and checked against the HTML comments right above it:

    <!-- expect: exit=0 stdout~="verified: every selected offset is IN_SYNC" -->
    <!-- runbook-test: skip (operator's own action) -->
    <!-- runbook-test: instead: zk2kafka sandbox stop-old-consumers --group reporting -->

and a page may carry harness-only steps (`<!-- runbook-test: run: CMD -->`, run where they
stand) and `<!-- runbook-test: kraft -->`. runbooks/README.md documents all of it for page
authors. The fast tests at the end check, without a cluster, that every page has its
sections and expectations and that every `zk2kafka` command line in it parses with the
real CLI parser, so a page that drifts from the CLI fails even where no cluster runs.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.cli import clean_env, zk2kafka_bin

ROOT = Path(__file__).resolve().parents[2]
RUNBOOKS = ROOT / "runbooks"

REQUIRED_SECTIONS = ("Purpose", "Preconditions", "Steps", "Expected output", "How to abort", "How to roll back",
                     "Clean up")
MAX_SKIPPED_BLOCKS = 2          # blocks a page may leave to the operator ("kept to a minimum")
SCRIPT_TIMEOUT = 840            # seconds for all blocks of one page
TAIL = 40                       # lines of output shown when a block fails

# Operator-only values the harness fills in; runbooks/README.md documents each one.
PLACEHELD_WRITERS = {
    "zookeeper-connect": "ZooKeeper connect string with the brokers' chroot",
    "kafka-bootstrap": "Kafka bootstrap servers (the ZooKeeper-mode cluster)",
    "kraft-bootstrap": "bootstrap servers of the new KRaft cluster",
    "state-dir": "the change's state directory",
    "client-properties": "Kafka client properties file",
    "zk-user": "ZooKeeper digest user",
    "zk-password": "ZooKeeper digest password",
    "groups-regex": "the change's groups, as one regular expression",
    "mm2-source-alias": "MirrorMaker 2's alias of the old cluster",
    "mm2-target-alias": "MirrorMaker 2's alias of the new cluster",
    "abandoned-groups-regex": "groups left behind on purpose, as one regular expression",
    "broker-jmx": "host:port of a broker's JMX",
    "metrics-port": "a free port for sync's or renew's /metrics and /healthz",
    "sandbox-state-dir": "the sandbox's own state dir (the sandbox only)",
}
SANDBOX_GROUPS = "(billing|archiver|reporting)"   # clean, plain, and one with an old consumer to stop
SANDBOX_ABANDONED = "(analytics|secured)"         # the seed's groups with values no migration can move
# Kafka's own tools, as a page names them for an operator, and what the sandbox runs in their place:
# the sandbox release's own tool from its pinned jars (runbooks/README.md says so to the reader).
SANDBOX_TOOLS = {"kafka-consumer-groups.sh": "zk2kafka sandbox kafka-consumer-groups --",
                 "kafka-get-offsets.sh": "zk2kafka sandbox kafka-get-offsets --",
                 "kafka-jmx.sh": "zk2kafka sandbox kafka-jmx --"}
# Environment variables a page may use besides the CLI's own ZK2KAFKA_<OPTION> ones.
# ZK2KAFKA_CRASH_AT: the writer's fault injection (migrate/write/dual_commit.py), which troubleshooting.md's
# sandbox-only step uses to leave a run killed half-way.
EXTRA_ENV = {"ZK2KAFKA_KRAFT_BOOTSTRAP_SERVER", "ZK2KAFKA_CRASH_AT"}

PRELUDE = r"""
set +e
"""


# ---- parsing a page -----------------------------------------------------------------------------------------------


@dataclass
class Expect:
    exit: set[int] | None = None            # None: any exit code
    stdout: list[str] = field(default_factory=list)
    stdout_not: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    stderr_not: list[str] = field(default_factory=list)
    text: str = ""

    @classmethod
    def parse(cls, text: str) -> Expect:
        """`exit=0|3 stdout~="regex" stdout!~="regex" stderr~="regex"`; raises ValueError on anything else."""
        exp = cls(text=text.strip())
        for token in shlex.split(text):
            key, sep, value = token.partition("=")
            if key == "exit" and sep:
                exp.exit = None if value == "any" else {int(v) for v in value.split("|")}
                continue
            match = re.fullmatch(r"(stdout|stderr)(!?)~", key)
            if not (match and sep):
                raise ValueError(f"unknown expectation {token!r}")
            re.compile(value, re.MULTILINE)
            getattr(exp, match[1] + ("_not" if match[2] else "")).append(value)
        if not exp.text:
            raise ValueError("empty expectation")
        return exp

    def failures(self, rc: int, out: str, err: str) -> list[str]:
        found = []
        if self.exit is not None and rc not in self.exit:
            found.append(f"exit {rc}, expected {'|'.join(map(str, sorted(self.exit)))}")
        for name, text in (("stdout", out), ("stderr", err)):
            found += [f"{name} does not match {rx!r}" for rx in getattr(self, name)
                      if not re.search(rx, text, re.MULTILINE)]
            found += [f"{name} matches {rx!r}, which it must not" for rx in getattr(self, name + "_not")
                      if re.search(rx, text, re.MULTILINE)]
        return found


@dataclass
class Step:
    """A ```sh block of the page (number = its position among them), or a harness-only `run:` step."""

    line: int
    code: str
    number: int | None = None          # None for a harness-only step
    expect: Expect | None = None
    skip: str | None = None
    instead: str | None = None

    @property
    def label(self) -> str:
        return f"block {self.number} (line {self.line})" if self.number else f"harness step (line {self.line})"

    @property
    def runs(self) -> str | None:
        """What the harness executes for this step, or None when it is left to the operator."""
        if self.instead is not None:
            return self.instead
        return None if self.skip is not None else self.code


@dataclass
class Page:
    path: Path
    text: str
    steps: list[Step]
    kraft: bool
    errors: list[str]      # malformed annotations, reported by the fast tests

    @property
    def blocks(self) -> list[Step]:
        return [s for s in self.steps if s.number is not None]


COMMENT = re.compile(r"^\s*<!--\s*(.*?)\s*-->\s*$")


def parse_page(path: Path) -> Page:
    """The page's steps in document order, with the annotations of each ```sh block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    steps: list[Step] = []
    errors: list[str] = []
    kraft = False
    pending: list[tuple[int, str]] = []   # annotation comments directly above the next line
    number = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        comment = COMMENT.match(line)
        if comment and (comment[1].startswith("expect:") or comment[1].startswith("runbook-test:")):
            body = comment[1]
            if body.startswith("runbook-test:"):
                directive = body.removeprefix("runbook-test:").strip()
                if directive == "kraft":
                    kraft = True
                elif directive.startswith("run:"):
                    code = directive.removeprefix("run:").strip()
                    refused = hidden_step_refusal(code)
                    if refused:
                        errors.append(f"line {i + 1}: hidden `run: {code}` {refused}: what changes what "
                                      "the page shows is a line of the page (a sandbox-only one), or goes")
                    steps.append(Step(i + 1, code))
                elif directive.startswith("skip") or directive.startswith("instead:"):
                    pending.append((i + 1, body))
                else:
                    errors.append(f"line {i + 1}: unknown directive {body!r}")
            else:
                pending.append((i + 1, body))
            i += 1
            continue
        fence = re.match(r"^(\s*)```(\S*)\s*$", line)
        if fence:
            lang, start = fence[2], i
            i += 1
            body_lines = []
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body_lines.append(lines[i])
                i += 1
            if lang == "sh":
                number += 1
                step = Step(start + 1, "\n".join(body_lines), number)
                for at, note in pending:
                    try:
                        if note.startswith("expect:"):
                            if step.expect is not None:
                                raise ValueError("two expect comments")
                            step.expect = Expect.parse(note.removeprefix("expect:"))
                        elif note.removeprefix("runbook-test:").strip().startswith("instead:"):
                            step.instead = note.removeprefix("runbook-test:").strip().removeprefix("instead:").strip()
                        else:
                            reason = note.removeprefix("runbook-test:").strip().removeprefix("skip").strip()
                            step.skip = reason.strip("() ") or "?"
                    except ValueError as e:
                        errors.append(f"line {at}: {e}")
                steps.append(step)
            elif pending:
                errors.append(f"line {start + 1}: annotations above a ```{lang} block, which is never run")
            pending = []
            i += 1
            continue
        if pending and line.strip():
            errors.append(f"line {pending[0][0]}: annotation not directly above a ```sh block")
            pending = []
        i += 1
    return Page(path, "\n".join(lines), steps, kraft, errors)


HIDDEN_EXPORT = re.compile(r"[A-Z][A-Z0-9_]*=\S*")
HIDDEN_SHELL = re.compile(r"\$\(|`|[;&|<>(){}\\]")


def hidden_step_refusal(code: str) -> str | None:
    """Why a hidden `run:` line is refused, None when it only sets variables: `export NAME=VALUE ...`,
    VALUE plain text or `$VARIABLE`s. Anything else may start a process or write to a store where
    the reader never sees it (a command, a redirection, a command substitution)."""
    found = HIDDEN_SHELL.search(code)
    if found:
        return f"uses {found[0]!r}"
    try:
        words = shlex.split(code)
    except ValueError:
        return "does not parse"
    if words[:1] != ["export"] or len(words) < 2:
        return "is not `export NAME=VALUE`"
    wrong = [w for w in words[1:] if not HIDDEN_EXPORT.fullmatch(w)]
    return f"exports {wrong[0]!r}, not NAME=VALUE" if wrong else None


def pages() -> list[Path]:
    """Every runbook page: runbooks/*.md except the index, so a new page is picked up by itself."""
    return sorted(p for p in RUNBOOKS.glob("*.md") if p.name != "README.md")


def fill(text: str, values: dict[str, str]) -> str:
    return re.sub(r"<([a-z][a-z0-9-]*)>", lambda m: values.get(m[1], m[0]), text)


def on_the_sandbox(code: str) -> str:
    """A block as the sandbox runs it: Kafka's own tools are the sandbox release's (SANDBOX_TOOLS)."""
    for tool, instead in SANDBOX_TOOLS.items():
        code = re.sub(rf"(?<![\w/.-]){re.escape(tool)}(?![\w.-])", instead, code)
    return code


# ---- running a page on a sandbox ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    rc: int | None
    out: str
    err: str


def run_steps(page: Page, env: dict[str, str], values: dict[str, str], work: Path) -> tuple[dict[int, Outcome], str]:
    """Run the page's steps in one bash process; each step's exit code and output, by step index."""
    out_dir = work / "steps"
    out_dir.mkdir()
    script = [PRELUDE, f"cd {shlex.quote(str(work))}"]
    for index, step in enumerate(page.steps):
        code = step.runs
        if code is None:
            continue
        base = shlex.quote(str(out_dir / str(index)))
        script += [f"echo {index} > {shlex.quote(str(out_dir / 'current'))}",
                   "{", on_the_sandbox(fill(code, values)), f"}} > {base}.out 2> {base}.err < /dev/null",
                   f"echo $? > {base}.rc"]
    script.append("kill $(jobs -p) 2>/dev/null; wait")   # what a page left running in the background
    path = work / "runbook.sh"
    path.write_text("\n".join(script) + "\n")
    proc = subprocess.Popen(["bash", str(path)], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        stray, _ = proc.communicate(timeout=SCRIPT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stray, _ = proc.communicate()
        current = (out_dir / "current").read_text().strip() if (out_dir / "current").exists() else "?"
        stray += f"\n[harness] timed out after {SCRIPT_TIMEOUT}s in step {current}"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)   # anything a block started and did not stop
    def read(name: str) -> str:
        file = out_dir / name
        return file.read_text(errors="replace") if file.exists() else ""

    outcomes = {index: Outcome(int(read(f"{index}.rc")) if read(f"{index}.rc") else None,
                               read(f"{index}.out"), read(f"{index}.err"))
                for index, step in enumerate(page.steps) if step.runs is not None}
    return outcomes, stray


def tail(text: str, n: int = TAIL) -> str:
    lines = text.rstrip("\n").splitlines()
    return "\n".join((["..."] if len(lines) > n else []) + lines[-n:]) or "(empty)"


def report(page: Page, step: Step, outcome: Outcome, problems: list[str]) -> str:
    ran = f"--- run instead (runbook-test) ---\n{step.instead}\n" if step.instead else ""
    return (f"{page.path.relative_to(ROOT)}, {step.label}: {'; '.join(problems)}\n"
            f"--- {'block' if step.number else 'harness step'} ---\n{step.code}\n{ran}"
            f"--- stdout (tail) ---\n{tail(outcome.out)}\n--- stderr (tail) ---\n{tail(outcome.err)}")


def sandbox(action: str, state: Path, *extra: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([zk2kafka_bin(), "sandbox", action, "--state-dir", str(state), *extra], cwd=state.parent,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.timeout(SCRIPT_TIMEOUT + 300)
@pytest.mark.parametrize("path", pages(), ids=lambda p: p.name)
def test_runbook_runs_on_a_fresh_sandbox(path: Path, tmp_path: Path):
    if shutil.which("jq") is None:
        pytest.fail("the runbooks use jq, and so does this test: install it (apt-get install jq)")
    page = parse_page(path)
    assert not page.errors, f"{path.name}: " + "; ".join(page.errors)
    state = tmp_path / "sandbox-state"
    env = clean_env()
    try:
        up = sandbox("up", state, *(["--kraft"] if page.kraft else []), env=env)
        assert up.returncode == 0, f"sandbox up failed:\n{up.stdout}\n{up.stderr}"
        exports = dict(line.removeprefix("export ").split("=", 1) for line in up.stdout.splitlines()
                       if line.startswith("export "))
        seeded = sandbox("seed", state, env=env)
        assert seeded.returncode == 0, f"sandbox seed failed:\n{seeded.stdout}\n{seeded.stderr}"
        status = sandbox("status", state, "--json", env=env)
        broker_jmx = json.loads(status.stdout)["endpoints"]["broker_jmx"]

        from migrate.jvm.server import free_port
        from migrate.sandbox.seed import SECURED_ACL_USER

        ops_state = tmp_path / "change"
        properties = tmp_path / "client.properties"
        properties.write_text("# the sandbox needs no client security\nsecurity.protocol=PLAINTEXT\n")
        values = {"zookeeper-connect": exports["ZK2KAFKA_ZOOKEEPER"],
                  "kafka-bootstrap": exports["ZK2KAFKA_BOOTSTRAP_SERVER"],
                  "state-dir": str(ops_state), "client-properties": str(properties),
                  "zk-user": SECURED_ACL_USER[0], "zk-password": SECURED_ACL_USER[1],
                  "groups-regex": SANDBOX_GROUPS, "abandoned-groups-regex": SANDBOX_ABANDONED,
                  # the aliases of the MirrorMaker 2 a page starts (migrate/sandbox/mirrormaker.py)
                  "mm2-source-alias": "old", "mm2-target-alias": "new", "broker-jmx": broker_jmx,
                  "metrics-port": str(free_port()),
                  "sandbox-state-dir": str(state)}
        if "ZK2KAFKA_KRAFT_BOOTSTRAP_SERVER" in exports:
            values["kraft-bootstrap"] = exports["ZK2KAFKA_KRAFT_BOOTSTRAP_SERVER"]
        run_env = {**env, **exports, "ZK2KAFKA_STATE_DIR": str(ops_state),
                   "PATH": os.pathsep.join([str(Path(zk2kafka_bin()).parent), env.get("PATH", "")])}
        outcomes, stray = run_steps(page, run_env, values, tmp_path)
    finally:
        down = sandbox("down", state, env=env)
    assert down.returncode == 0, f"sandbox down failed:\n{down.stdout}\n{down.stderr}"

    failures = []
    for index, step in enumerate(page.steps):
        if step.runs is None:
            continue
        outcome = outcomes[index]
        if outcome.rc is None:
            failures.append(f"{page.path.relative_to(ROOT)}, {step.label}: never finished\n--- block ---\n"
                            f"{step.code}\n--- output of the script ---\n{tail(stray)}\n"
                            f"--- stdout (tail) ---\n{tail(outcome.out)}\n--- stderr (tail) ---\n{tail(outcome.err)}")
            break
        if step.number is None and outcome.rc != 0:   # a harness-only step: its failure explains what follows
            failures.append(report(page, step, outcome, [f"exit {outcome.rc}"]))
        elif step.expect is not None:
            problems = step.expect.failures(outcome.rc, outcome.out, outcome.err)
            if problems:
                failures.append(report(page, step, outcome, problems))
    if failures:
        more = f"\n\n({len(failures) - 1} later step(s) failed too)" if len(failures) > 1 else ""
        pytest.fail(failures[0] + more, pytrace=False)


# ---- fast checks, no cluster --------------------------------------------------------------------------------------


def _sh_commands(code: str) -> list[list[str]]:
    """Each command line's shell words: continuation lines and multi-line quotes joined, here-documents left out."""
    lines, out, heredoc, pending = code.replace("\\\n", " ").splitlines(), [], None, ""
    for line in lines:
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        marker = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if marker:
            heredoc = marker[1]
        line = re.sub(r"(?<![\w$])\d+(?=[<>])", "", line)   # 2>/dev/null: the 2 is no argument
        pending = f"{pending}\n{line}" if pending else line
        lex = shlex.shlex(pending, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        try:
            words = list(lex)
        except ValueError:   # a quote that closes on a later line
            continue
        out.append(words)
        pending = ""
    if pending:
        raise ValueError(f"unbalanced quotes in: {pending}")
    return out


def zk2kafka_invocations(code: str) -> list[list[str]]:
    """The arguments after each `zk2kafka` word, up to the end of that command (|, ;, &&, ), > ...)."""
    found = []
    for words in _sh_commands(code):
        for i, word in enumerate(words):
            if word == "zk2kafka" or word.endswith("/zk2kafka"):
                args = []
                for arg in words[i + 1:]:
                    if re.fullmatch(r"[();<>|&]+", arg):
                        break
                    args.append(arg)
                found.append(args)
    return found


def _page_ids() -> list[Path]:
    return pages() or [pytest.param(None, marks=pytest.mark.skip(reason="no runbook pages yet"))]


@pytest.mark.parametrize("path", _page_ids(), ids=lambda p: getattr(p, "name", "none"))
def test_page_has_its_sections_and_every_block_an_expectation(path: Path):
    page = parse_page(path)
    assert not page.errors, f"{path.name}: " + "; ".join(page.errors)
    headings = re.findall(r"^## (.+?)\s*$", page.text, re.MULTILINE)
    missing = [s for s in REQUIRED_SECTIONS if s not in headings]
    assert not missing, f"{path.name}: missing sections {missing}"
    order = [headings.index(s) for s in REQUIRED_SECTIONS]
    assert order == sorted(order), f"{path.name}: sections out of order, expected {REQUIRED_SECTIONS}"
    assert page.blocks, f"{path.name}: no ```sh block to run"
    for block in page.blocks:
        where = f"{path.name}, {block.label}:\n{block.code}"
        if block.skip is not None and block.instead is None:
            assert block.expect is None, f"{where}\nis skipped, so its expectation would never be checked"
        else:
            assert block.expect is not None, f"{where}\nhas no <!-- expect: ... --> (or runbook-test: skip) above it"
    skipped = [b for b in page.blocks if b.skip is not None and b.instead is None]
    assert len(skipped) <= MAX_SKIPPED_BLOCKS, f"{path.name}: {len(skipped)} skipped blocks; keep them to a minimum"


@pytest.mark.parametrize("path", _page_ids(), ids=lambda p: getattr(p, "name", "none"))
def test_every_command_line_of_the_page_parses_with_the_real_cli(path: Path):
    from migrate.cli import build_parser
    from migrate.options import OPTIONS

    page = parse_page(path)
    known_env = {o.env_var for o in OPTIONS if o.env_var} | EXTRA_ENV
    for step in page.steps:
        for code in filter(None, (step.code, step.instead)):
            where = f"{path.name}, {step.label}"
            operators = step.number is not None and code is step.code   # harness-only steps may use test hooks
            for name in sorted(set(re.findall(r"\bZK2KAFKA_[A-Z0-9_]+\b", code)) - known_env if operators else ()):
                pytest.fail(f"{where}: {name} is not an environment variable the CLI reads")
            for holder in re.findall(r"<([a-z][a-z0-9-]*)>", code):
                assert holder in PLACEHELD_WRITERS, f"{where}: unknown placeholder <{holder}> (see runbooks/README.md)"
                assert holder != "kraft-bootstrap" or page.kraft, \
                    f"{where}: <kraft-bootstrap> needs <!-- runbook-test: kraft --> on the page"
            for args in zk2kafka_invocations(code):
                assert args, f"{where}: `zk2kafka` without a command"
                # Values that come from the shell ($RUN, "$REPORT/...") or a placeholder stand for any string.
                argv = ["VALUE" if "$" in a or re.search(r"<[a-z][a-z0-9-]*>", a) else a for a in args]
                err, refused = io.StringIO(), False
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    try:
                        build_parser().parse_args(argv)
                    except SystemExit as e:
                        refused = e.code not in (0, None)
                if refused:
                    pytest.fail(f"{where}: `zk2kafka {' '.join(args)}` does not parse:\n{err.getvalue()}",
                                pytrace=False)


def test_index_lists_every_page_and_documents_the_placeholders():
    index = (RUNBOOKS / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    expected = {p.name for p in pages()} | {"cutover-rolling.md"}
    assert expected <= listed, f"runbooks/README.md does not link {sorted(expected - listed)}"
    for holder in PLACEHELD_WRITERS:
        assert f"<{holder}>" in index, f"runbooks/README.md does not document <{holder}>"


@pytest.mark.parametrize("path", _page_ids(), ids=lambda p: getattr(p, "name", "none"))
def test_page_links_the_runbooks_set_up_by_a_name_no_one_takes_for_the_top_level_readme(path: Path):
    text = path.read_text(encoding="utf-8")
    assert "](README.md#set-up)" in text, f"{path.name}: does not link the runbooks' set-up (README.md#set-up)"
    for name, target in re.findall(r"\[([^\]]+)\]\((README\.md[^)]*)\)", text):
        assert "README" not in name, f"{path.name}: [{name}]({target}) reads as the top-level README"


def test_a_hidden_line_that_does_more_than_export_a_variable_is_refused(tmp_path: Path):
    """Only `export NAME=VALUE ...` may be hidden: a hidden command, redirection or command substitution
    (a process started, a store written) is an error of the page, naming the line."""
    bad = {
        'zk2kafka sandbox stop-old-consumers --group reporting && zk2kafka migrate --execute -q': "'&'",
        'sandbox_v0_client legacy-v0 payments 0 5 0.5': "is not `export NAME=VALUE`",
        'mkdir -p "$ZK2KAFKA_STATE_DIR"': "is not `export NAME=VALUE`",
        'printf "group = []" > change.toml': "'>'",
        "export ZK2KAFKA_PORT=$(python -c 'print(1)')": "'$('",
        "export ZK2KAFKA_CRASH_AT=x; zk2kafka migrate --execute": "';'",
        "export ZK2KAFKA_X=`zk2kafka migrate --execute`": "'`'",
        "export ZK2KAFKA_QUIET_FOR=5s zk2kafka": "exports 'zk2kafka'",
        "export": "is not `export NAME=VALUE`",
    }
    good = ["export ZK2KAFKA_QUIET_FOR=5s", "export ZK2KAFKA_QUIET_FOR=5s ZK2KAFKA_RESCAN_EVERY=2s",
            "export ZK2KAFKA_METRICS_ADDRESS=127.0.0.1:$PORT"]
    lines = [f"<!-- runbook-test: run: {code} -->" for code in [*good, *bad]]
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n" + "\n".join(lines) + "\n<!-- expect: exit=0 -->\n```sh\ntrue\n```\n")
    parsed = parse_page(page)
    assert len(parsed.errors) == len(bad), parsed.errors
    for error, (code, why) in zip(parsed.errors, bad.items(), strict=True):
        assert f"hidden `run: {code}` " in error and why in error, error
    assert [e.split(":")[0] for e in parsed.errors] == [f"line {3 + len(good) + n}" for n in range(len(bad))]
    assert all(hidden_step_refusal(code) is None for code in good)


def _message_templates() -> list[str]:
    """Every string literal under migrate/, f-string fields and %-conversions shown as `…`."""
    import migrate

    templates = []
    for source in Path(migrate.__file__).parent.rglob("*.py"):   # the code the CLI runs
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            templates.append(re.sub(r"%[-0-9.]*[sdrf]", "…", text))
    return templates


def _quoted_messages() -> list[tuple[str, str]]:
    """(page, message) for every heading of the pages that is nothing but a code span: `message`."""
    found = []
    for path in pages():
        for message in re.findall(r"^#{3,5} `([^`]+)`\s*$", path.read_text(encoding="utf-8"), re.MULTILINE):
            found.append((path.name, message))
    return found


def test_error_messages_quoted_in_the_pages_are_the_ones_the_cli_prints():
    """A heading such as #### `cannot connect to ZooKeeper at … within 15s` must be a message migrate/ can
    print, `…` standing for the variable parts; a message the code changed fails here."""
    templates = _message_templates()
    quoted = _quoted_messages()
    assert quoted or not pages() or not (RUNBOOKS / "troubleshooting.md").exists(), "no quoted messages found"
    wrong = []
    for page, message in quoted:
        as_regex = ".*?".join(re.escape(part) for part in message.split("…"))
        matches = any(re.search(as_regex, t, re.DOTALL) for t in templates) or any(
            sum(len(p) for p in t.split("…")) >= 12
            and re.fullmatch(".*?".join(re.escape(p) for p in t.split("…")), message, re.DOTALL)
            for t in templates if "…" in t)
        if not matches:
            wrong.append(f"{page}: `{message}`")
    assert not wrong, "messages quoted in the runbooks that migrate/ does not print:\n" + "\n".join(wrong)
