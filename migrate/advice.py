"""Printed advice that pastes into the shell that ran the command.

Every command line zk2kafka prints as advice is "zk2kafka COMMAND ..." between backticks. The
options that say where the stores, the state and the config file are, when they were given on this
command line, are repeated right after the command's name: the environment and a config file are
read again by the pasted command, flags are not. An option the advice names itself (`--zookeeper`
and `--zk-root` of another tree, say) is not repeated.
"""

from __future__ import annotations

import re
import shlex

from migrate.options import OPTIONS
from migrate.settings import Settings

# Where things are, never what to do: the selection and the policies are the advice's own to say.
# Secrets are never printed; they come from the environment or a file.
WHERE = ("config", "zookeeper", "zk_root", "layout", "path_template", "zk_sasl_mechanism",
         "zk_sasl_username", "zk_tls", "zk_tls_cafile", "zk_tls_certfile", "zk_tls_keyfile",
         "bootstrap_server", "command_config", "state_dir")
_ADVISED = ("scan", "diff", "migrate", "verify", "rollback", "status", "sync", "renew",
            "ready-for-kraft")
_ADVICE = re.compile(r"(`(?:[A-Z_]+=\$\()?zk2kafka )(" + "|".join(_ADVISED) + r")((?: [^`]*)?`)")
_BY_NAME = {opt.name: opt for opt in OPTIONS}
# renew reads Kafka and the journal alone: where ZooKeeper is, it is not told.
_ZOOKEEPER = frozenset(n for n in WHERE if n.startswith("zk") or n in ("zookeeper", "layout",
                                                                        "path_template"))


def where_flags(settings: Settings, command: str, own: str = "") -> str:
    """The WHERE options given as flags that `command` takes, as ` --flag value` to paste; none
    that the advice's own flags (`own`) name."""
    flags = []
    for name in WHERE:
        opt = _BY_NAME[name]
        if (settings.sources.get(name) != "flag" or (opt.commands and command not in opt.commands)
                or (command == "renew" and name in _ZOOKEEPER)
                or re.search(rf"(^|\s){re.escape(opt.cli_flag)}(\s|=|`|$)", own)):
            continue
        value = getattr(settings, name)
        if opt.kind == "bool":
            flags.append(f" {opt.cli_flag}" if value else "")
        else:
            flags.append(f" {opt.cli_flag} {shlex.quote(str(value))}")
    return "".join(flags)


def repeat_where(text: str, settings: Settings | None) -> str:
    """`text` with each printed "zk2kafka COMMAND" followed by the WHERE flags it takes."""
    if settings is None:
        return text
    return _ADVICE.sub(lambda m: m.group(1) + m.group(2)
                       + where_flags(settings, m.group(2), m.group(3)) + m.group(3), text)
