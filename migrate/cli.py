"""The `zk2kafka` command line: parse flags, build Settings, call `migrate.commands`, map errors
to exit codes.

This is the only place that turns exceptions into exit codes; nothing else
calls `sys.exit`.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import sys
import traceback
from collections.abc import Callable, Sequence

from migrate import __version__, commands
from migrate.advice import repeat_where
from migrate.errors import (EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, ConfigError,
                            MigrateError, UnknownOption)
from migrate.durations import exact_duration, parse_duration
from migrate.jvm.releases import DEFAULT_KAFKA_VERSION, RELEASES
from migrate.jvm.server import heap_size
from migrate.log import configure_logging, redact, set_secrets
from migrate.options import OPTIONS, Option
from migrate.sandbox import V0_EVERY_FLOOR, V0_EVERY_FLOOR_WHY
from migrate.sandbox.modes import PHASES
from migrate.settings import Settings, load_settings

log = logging.getLogger("migrate")

COMMANDS: dict[str, str] = {
    "scan": "read every ZooKeeper offset into a snapshot and print counts",
    "diff": "dry-run: compare ZooKeeper offsets with Kafka and write the report (never writes)",
    "migrate": "commit the plan to Kafka and ZooKeeper (dry run unless --execute)",
    "verify": "re-diff; exit 0 only if every selected ZooKeeper offset equals Kafka's",
    "sync": "follow mode: mirror ZooKeeper offset changes into Kafka until stopped",
    "renew": "keep alive the offsets zk2kafka wrote, from Kafka and the journal alone (no "
             "ZooKeeper): re-commit each as Kafka holds it (dry run unless --execute)",
    "ready-for-kraft": "before each KIP-866 step: exit 0 only if nothing kept in ZooKeeper would "
                       "be left behind (read-only; watches for writes for --quiet-for)",
    "rollback": "restore the offsets a run recorded before it wrote (dry run unless --execute)",
    "status": "progress of runs from the journal",
    "sandbox": "a real local ZooKeeper + Kafka to try zk2kafka on",
}

EPILOG = """\
exit codes: 0 success, 1 error (also: diff or migrate found no offsets at all),
            2 usage or configuration error,
            3 the diff has blockers (diff, dry-run), groups moved since the review (migrate --plan,
              dry run), or verify found a mismatch or no offsets at all,
            130 interrupted (Ctrl-C)
Nothing is written without --execute (never abbreviated, never from the environment or a file).
--group, --exclude-group and --topic are full matches (Java's matches()): \
`billing.*`, not `^billing`
Options can also come from ZK2KAFKA_<OPTION> environment variables
(e.g. ZK2KAFKA_ZOOKEEPER, ZK2KAFKA_BOOTSTRAP_SERVER) and a TOML --config file;
flags win over the environment, which wins over the file."""


class Parser(argparse.ArgumentParser):
    """argparse without abbreviations (`--exec` is not `--execute`), whose unknown options are
    refused by the command's own parser, with the flag meant when one is close."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, allow_abbrev=False, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def parse_args(self, args=None, namespace=None):
        args = _signed_durations(sys.argv[1:] if args is None else list(args))
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            # The command's parser says it, with its usage: the flag belongs to that command line.
            command = getattr(parsed, "command", None)
            if command == "sandbox":
                command = f"sandbox {getattr(parsed, 'action', None)}"
            parser = self.commands.get(command, self)
            parser.error(unrecognized(unknown, parser))
        return parsed


DURATION_FLAGS = frozenset(o.cli_flag for o in OPTIONS if o.kind == "duration")


def _signed_durations(args: list[str]) -> list[str]:
    """`--quiet-for -5s` as `--quiet-for=-5s`: argparse takes a value starting with `-` for a
    flag ("expected one argument"); joined, the duration's own error says what is wrong."""
    out: list[str] = []
    for arg in args:
        if (out and out[-1] in DURATION_FLAGS and arg[:1] == "-" and len(arg) > 1
                and (arg[1].isdigit() or arg[1] == ".")):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _duration(text: str, floor: float | None = None, why: str = "") -> str:
    """A duration flag's value, checked as every source's is, its floor too (argparse makes the
    error a usage error, exit 2); settings reads it again."""
    try:
        parse_duration(text, "", floor, why)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(": ")) from None
    return text


def duration_flag(floor: float | None = None, why: str = "") -> Callable[[str], str]:
    """argparse's `type` of a duration flag with this floor (argparse names a `type` in its
    errors: this one is a duration)."""
    def duration(text: str) -> str:
        return _duration(text, floor, why)
    return duration


def unrecognized(unknown: list[str], parser: argparse.ArgumentParser) -> str:
    """argparse's `unrecognized arguments`, with the flag meant where one is close."""
    message = f"unrecognized arguments: {' '.join(unknown)}"
    flag = next((u.split("=", 1)[0] for u in unknown if u.startswith("--")), None)
    if flag is None:
        return message
    flags = [o for o in parser._option_string_actions if o.startswith("--")]
    if flag.replace("-", "") == "dryrun" and "--execute" in flags:
        return f"{message} (without --execute every command is a dry run)"
    meant = suggest(flag, flags)
    return f"{message} (did you mean {meant}?)" if meant else message


def suggest(word: str, known: list[str]) -> str | None:
    """The known words `word` was probably meant as, or None: those it is a prefix of (flags are
    never abbreviated), else the closest one."""
    prefixed = sorted(k for k in known if k.startswith(word))
    if prefixed:
        return " or ".join(prefixed[:3])
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.7)
    return close[0] if close else None


def _add_option(parser: argparse.ArgumentParser, opt: Option) -> None:
    # SUPPRESS keeps unset flags out of the namespace so lower layers (env, TOML) can fill them.
    extra = f" [env {opt.env_var}]" if opt.env_var else ""
    default = f" (default: {opt.shown_default})" if opt.default not in (None, (), False) else ""
    common = dict(dest=opt.name, default=argparse.SUPPRESS, help=opt.help + default + extra)
    if opt.kind == "bool":
        parser.add_argument(opt.cli_flag, action="store_true", **common)
    elif opt.repeatable:
        parser.add_argument(opt.cli_flag, action="append", metavar=opt.metavar, **common)
    elif opt.kind == "choice":
        parser.add_argument(opt.cli_flag, choices=opt.choices, **common)
    elif opt.kind == "duration":
        parser.add_argument(opt.cli_flag, metavar=opt.metavar,
                            type=duration_flag(opt.floor, opt.floor_why), **common)
    else:
        parser.add_argument(opt.cli_flag, metavar=opt.metavar or opt.name.upper(), **common)


def _add_global_options(parser: argparse.ArgumentParser) -> None:
    glob = parser.add_argument_group("global options")
    for opt in OPTIONS:
        if not opt.commands:
            _add_option(glob, opt)
    glob.add_argument("-v", "--verbose", dest="verbosity", action="count",
                      default=argparse.SUPPRESS, help="more log output (repeatable)")
    glob.add_argument("-q", "--quiet", dest="quiet", action="store_true",
                      default=argparse.SUPPRESS, help="only warnings and errors on stderr")


def _options_parser(command: str | None) -> argparse.ArgumentParser:
    """A parent parser with the options specific to `command`, then the global ones: `--help`
    shows the command's own first."""
    parent = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    specific = [o for o in OPTIONS if command in o.commands]
    if specific:
        group = parent.add_argument_group(f"{command} options")
        for opt in specific:
            _add_option(group, opt)
    _add_global_options(parent)
    return parent


USAGE = {"rollback": "RUN_ID [options]", "status": "[RUN_ID] [options]",
         "sandbox": "ACTION [options]"}


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser; tests and docs introspect it."""
    parser = Parser(
        prog="zk2kafka", usage="%(prog)s COMMAND [options]  (zk2kafka COMMAND --help lists them)",
        description="Move Kafka consumer-group offsets from ZooKeeper into Kafka, safely.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"zk2kafka {__version__}")
    # Global options are taken before the command too (`zk2kafka --zookeeper X scan`), as
    # operators type them. Their defaults are SUPPRESS on both sides, so a flag given after the
    # command wins over the same flag given before it, and an unset one stays unset for the
    # environment and the file.
    _add_global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, prog="zk2kafka")
    for name, summary in COMMANDS.items():
        # A short usage: the whole list of options is what --help is for.
        usage = f"%(prog)s {USAGE.get(name, '[options]')}  (%(prog)s --help lists them)"
        p = sub.add_parser(name, help=summary, description=summary, epilog=EPILOG, usage=usage,
                           parents=[_options_parser(name)],
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.commands[name] = p
        if name == "rollback":
            p.add_argument("run_id", metavar="RUN_ID",
                           help="the run to undo (see `zk2kafka status`)")
        elif name == "status":
            p.add_argument("run_id", metavar="RUN_ID", nargs="?",
                           help="one run; all runs when omitted")
        elif name == "sandbox":
            for action, a in _add_sandbox_arguments(p).items():
                parser.commands[f"sandbox {action}"] = a
    return parser


SANDBOX_ACTIONS: dict[str, str] = {
    "up": "start ZooKeeper + a ZooKeeper-mode Kafka and print export lines",
    "down": "stop every server of the sandbox",
    "status": "where the sandbox listens, which mode it is in, and whether each server is alive",
    "seed": "create topics with messages and legacy ZooKeeper offsets (the demo's groups, "
            "and --groups N more)",
    "kraft-migrate": "migrate the 3.9.2 sandbox to KRaft in place with Kafka's own KIP-866 "
                     "migration, phase by phase up to --to (finalized: then ZooKeeper stopped "
                     "unless kept); print export lines",
    "stop-old-consumers": "stop the sandbox's old consumers of the --group groups: their "
                          "registrations under ids/ and owners/ go, as when they stop",
    "old-consumer-commit": "commit --offset for the --group group's --topic/--partition to "
                           "ZooKeeper, as that group's old consumer does",
    "new-consumer": "what starting the --group group's new consumers does: one joins, reads "
                    "--topic to its end from the group's offsets in Kafka, commits and leaves",
    "v0-client": "start (in the background) or stop a legacy client of the --group group that "
                 "commits its offsets through the broker with OffsetCommit v0, as the oldest "
                 "clients do; `sandbox down` stops it too",
    "kafka-consumer-groups": "run the sandbox release's own kafka-consumer-groups "
                             "(its pinned jars): zk2kafka sandbox kafka-consumer-groups -- ARGS",
    "kafka-get-offsets": "run the sandbox release's own kafka-get-offsets "
                         "(its pinned jars): zk2kafka sandbox kafka-get-offsets -- ARGS",
    "kafka-jmx": "run the sandbox release's own kafka-jmx (its pinned jars) against the "
                 "broker's JMX: zk2kafka sandbox kafka-jmx -- ARGS",
}


def _add_sandbox_arguments(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sandbox's actions, each a parser with its own options first, then the global ones."""
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    parsers = {}
    for name, summary in SANDBOX_ACTIONS.items():
        # No abbreviations: a prefix of one flag must not pass for another.
        a = actions.add_parser(name, help=summary, description=summary,
                               prog=f"zk2kafka sandbox {name}", usage="%(prog)s [options]",
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        parsers[name] = a
        own = a.add_argument_group(f"sandbox {name} options")
        if name == "up":
            own.add_argument("--kraft", action="store_true",
                             help="also start a Kafka 4.x KRaft broker as a separate target "
                                  "cluster")
            own.add_argument("--kafka-version", metavar="V", default=None,
                             help="the ZooKeeper-mode Kafka release, with the ZooKeeper it ships "
                                  f"(default {DEFAULT_KAFKA_VERSION}; supported: "
                                  f"{', '.join(RELEASES)})")
            own.add_argument("--zookeeper-heap", metavar="SIZE", type=_heap, default=None,
                             help="ZooKeeper's maximum heap, as the JVM's -Xmx takes it (512m, "
                                  "4g; default 512m): it holds every znode, a million offsets "
                                  "need more (docs/sandbox.md)")
            own.add_argument("--broker-heap", metavar="SIZE", type=_heap, default=None,
                             help="every broker's maximum heap, the --kraft one's too (default "
                                  "512m): a broker holds every committed offset "
                                  "(docs/sandbox.md)")
        elif name == "seed":
            own.add_argument("--groups", dest="seed_groups", metavar="N", type=_count, default=0,
                             help="also seed N groups bulk-00001 ... on the topic `bulk`, in "
                                  "ZooKeeper transactions (10,000 groups in seconds)")
            own.add_argument("--partitions", dest="seed_partitions", metavar="P", type=_count,
                             default=4, help="partitions of the topic `bulk` (default 4)")
        elif name == "kraft-migrate":
            own.add_argument("--to", dest="kraft_phase", choices=tuple(PHASES),
                             default="finalized",
                             help="stop after this phase, to check between phases; a later call "
                                  "goes on from there. migration: the controller has migrated "
                                  "the metadata, the broker runs in migration mode (ZooKeeper "
                                  "still its truth); kraft: the broker restarted as a KRaft "
                                  "broker, not finalized; finalized: the controller restarted "
                                  "without the migration flag, no way back (default)")
            own.add_argument("--keep-zookeeper", action="store_true",
                             help="leave ZooKeeper running once finalized (it is stopped then "
                                  "by default; before, it always runs)")
        elif name == "v0-client":
            own.add_argument("v0_action", metavar="start|stop", choices=("start", "stop"),
                             help="start one of --group (NAME) committing to --topic NAME, or "
                                  "stop those of --group (every one without it)")
        if name in ("old-consumer-commit", "v0-client"):
            own.add_argument("--partition", metavar="P", type=int, default=0,
                             help="the partition of --topic it commits to (default 0)")
            own.add_argument("--offset", metavar="N", type=int, default=0,
                             help="the offset it commits" + (" first, then one more each time"
                                                             if name == "v0-client" else ""))
        if name == "v0-client":
            own.add_argument("--every", metavar="DURATION", default="1s",
                             type=duration_flag(V0_EVERY_FLOOR, V0_EVERY_FLOOR_WHY),
                             help="how often it commits (default 1s; at least "
                                  f"{exact_duration(V0_EVERY_FLOOR)})")
        elif name.startswith("kafka-"):
            default = "--jmx-url" if name == "kafka-jmx" else "--bootstrap-server"
            own.add_argument("tool_args", metavar="-- ARGS", nargs=argparse.REMAINDER,
                             help=f"{name}'s own arguments, after `--`; {default} "
                                  "defaults to the sandbox's broker")
        _add_global_options(a)
    return parsers


def _count(text: str) -> int:
    """A positive integer flag value (argparse makes the error a usage error, exit 2)."""
    if not text.isascii() or not text.isdigit() or not 0 < int(text) < 10**7:
        raise argparse.ArgumentTypeError(f"expected a positive integer below 10,000,000, "
                                         f"got {text!r}")
    return int(text)


def _heap(text: str) -> str:
    """A JVM heap size flag value (argparse makes the error a usage error, exit 2)."""
    try:
        return heap_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code."""
    set_secrets(())   # an earlier call's secrets (in one process) are not this command's
    parser = build_parser()
    try:
        args = vars(parser.parse_args(argv))
    except SystemExit as e:  # argparse already printed usage or help
        return EXIT_OK if e.code in (0, None) else EXIT_USAGE
    command = args.pop("command")
    if args.pop("quiet", False):
        args["verbosity"] = -1
    debug = bool(args.get("debug"))
    settings = None
    try:
        settings = load_settings(args)
        configure_logging(settings.log_format, settings.verbosity, settings.secrets())
        result = commands.run(command, settings, args)
        if result is not None:
            print(json.dumps(result.to_json(), indent=2) if settings.json
                  else repeat_where(result.render(), settings))
        return EXIT_OK if result is None else result.exit_code
    except MigrateError as e:
        if isinstance(e, UnknownOption):   # as an unknown flag is answered: with the usage
            print(parser.commands[command].format_usage(), end="", file=sys.stderr)
        _report(e, debug, settings=settings)
        return e.exit_code
    except KeyboardInterrupt:
        print("zk2kafka: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    # The last line of defence: one clear line, never a bare traceback.
    except Exception as e:  # noqa: BLE001
        _report(e, debug, unexpected=True, settings=settings)
        return EXIT_ERROR


def _report(error: BaseException, debug: bool, unexpected: bool = False,
            settings: Settings | None = None) -> None:
    if debug:
        print(redact("".join(traceback.format_exception(error))), end="", file=sys.stderr)
    kind = f"unexpected {type(error).__name__}: " if unexpected else ""
    hint = "" if debug or not unexpected else " (run with --debug for the traceback)"
    message = repeat_where(f"zk2kafka: error: {kind}{error}{hint}", settings)
    print(redact(message), file=sys.stderr)
