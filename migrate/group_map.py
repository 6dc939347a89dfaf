"""The group mapping: which Kafka group each ZooKeeper group's offsets go to, when a cutover is also
a rename (`--map-group OLD=NEW`, `--map-group-file FILE`).

A rule is an OLD pattern, a full match like `--group`, and a NEW template holding OLD's groups
(`legacy-(.*)=\\1-v2`); a file holds literal `old,new` pairs. A group no rule matches keeps its
name. The mapping is chosen once where a command starts (`chosen`); the stages after it are given
old -> new names (`resolve`), never the flags.

Refused, each in one line (a ConfigError, exit 2): an OLD that does not compile, a NEW that is
empty or names a group OLD does not have, a bad line of the file (with its number), and, once the
old groups are known, a NEW that comes out empty, one old group that two rules send to different
names, and two old groups that would meet in one Kafka group (two mapped onto one name, or one
mapped onto the name another keeps).
"""

from __future__ import annotations

import csv
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.errors import ConfigError

FLAG, FILE_FLAG = "--map-group", "--map-group-file"
RECORD_KEY = "group_map"   # in a run's recorded settings: {zookeeper group: kafka group}
# What NEW may hold besides plain text: OLD's groups by number or name, and a backslash itself.
_REFERENCE = re.compile(r"\\(?:(\d{1,2})|g<([^>]*)>|(\\))|(\\.?)")


class GroupMapRefused(ConfigError):
    """A mapping that would send offsets where nobody meant them (see the module's docstring)."""


@dataclass(frozen=True)
class Rule:
    """One OLD=NEW: `pattern` (a full-match regular expression) and `template`; `where` names it in
    a message (`--map-group 'a=b'`, `groups.csv:3`)."""

    pattern: str
    template: str
    where: str

    def new_name(self, group: str) -> str | None:
        """The name `group` maps to by this rule, or None when OLD does not match it whole."""
        match = re.fullmatch(self.pattern, group)
        if match is None:
            return None
        return _REFERENCE.sub(lambda ref: _expand(ref, match), self.template)


def _expand(ref: re.Match, match: re.Match) -> str:
    number, name, backslash, _ = ref.groups()
    if backslash:
        return "\\"
    key: int | str = int(number) if number else (int(name) if name.isdigit() else name)
    return match.group(key) or ""   # a group that took no part in the match is empty


def parse_rule(text: str, where: str | None = None) -> Rule:
    """`OLD=NEW` as a Rule, split at its last `=` (OLD may hold a lookahead `(?=`, NEW no `=`).

    Raises ConfigError when there is no `=`, OLD does not compile, NEW is empty, or NEW holds a
    backslash that is no `\\N`, `\\g<name>` or `\\\\`, or names a group OLD does not have.
    """
    where = where or f"{FLAG} '{text}'"
    old, eq, new = text.rpartition("=")
    if not eq or not old:
        raise ConfigError(f"{where}: expected OLD=NEW (OLD a regular expression matching whole "
                          "group names, NEW the name, with \\1 for OLD's groups)")
    if not new:
        raise ConfigError(f"{where}: NEW is empty; a Kafka group needs a name")
    try:
        compiled = re.compile(old)
    except re.error as e:
        raise ConfigError(f"{where}: bad regular expression '{old}': {e}") from None
    except (OverflowError, RecursionError):
        raise ConfigError(f"{where}: regular expression too large or too deeply nested: "
                          f"'{old}'") from None
    for ref in _REFERENCE.finditer(new):
        number, name, backslash, stray = ref.groups()
        if stray is not None:
            raise ConfigError(f"{where}: NEW '{new}' holds '{stray}': a backslash in NEW is \\1 "
                              "(a group of OLD), \\g<name> or \\\\ (a backslash)")
        if backslash is None and not _has_group(compiled, number or name):
            named = f" named {', '.join(compiled.groupindex)}" if compiled.groupindex else ""
            raise ConfigError(f"{where}: NEW '{new}' names group '{ref.group(0)}', and OLD "
                              f"'{old}' has {compiled.groups} group(s){named}")
    return Rule(old, new, where)


def _has_group(compiled: re.Pattern, key: str) -> bool:
    """Whether `key` (a number, or a name) is a group of `compiled` (0: the whole match)."""
    return int(key) <= compiled.groups if key.isdigit() else key in compiled.groupindex


def read_map_file(path: Path) -> tuple[Rule, ...]:
    """The rules of a CSV file of literal `old,new` names, one pair a line (blank lines skipped;
    a name holding a comma or a quote is quoted as CSV quotes it).

    Raises ConfigError naming the file and line of a line that is no pair, a name that is empty,
    an old name given twice, or a new name given to two old ones.
    """
    try:
        text = path.read_text("utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read it: {e.strerror}", source=f"{FILE_FLAG} {path}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start})",
                          source=f"{FILE_FLAG} {path}") from None
    rules: list[Rule] = []
    olds: dict[str, int] = {}
    news: dict[str, tuple[str, int]] = {}
    reader = csv.reader(text.splitlines(keepends=True), strict=True)
    while True:
        try:
            row = next(reader, None)
        except csv.Error as e:
            raise ConfigError(f"not a CSV line: {e}", source=str(path),
                              line=reader.line_num) from None
        if row is None:
            break
        line = reader.line_num
        if not row or row == [""]:
            continue
        if len(row) != 2:
            raise ConfigError(f"expected old,new (two names), got {len(row)} field(s): "
                              f"'{','.join(row)}'", source=str(path), line=line)
        old, new = row
        if not old or not new:
            raise ConfigError(f"{'old' if not old else 'new'} name is empty", source=str(path),
                              line=line)
        if old in olds:
            raise ConfigError(f"'{old}' is mapped again (first on line {olds[old]})",
                              source=str(path), line=line)
        if new in news:
            raise ConfigError(f"'{old}' and '{news[new][0]}' (line {news[new][1]}) are both "
                              f"mapped to '{new}'", source=str(path), line=line)
        olds[old], news[new] = line, (old, line)
        # A literal name is matched as itself: `a.b` maps a.b alone, never axb.
        rules.append(Rule(re.escape(old), new.replace("\\", "\\\\"), f"{path}:{line}"))
    return tuple(rules)


@dataclass(frozen=True)
class GroupMap:
    """The rules of a command, in the order given (flags, then the file's lines). Empty: every
    group keeps its name."""

    rules: tuple[Rule, ...] = ()
    texts: tuple[str, ...] = ()      # the --map-group values as given
    file: Path | None = None         # the --map-group-file as given

    def __bool__(self) -> bool:
        return bool(self.rules)

    def new_name(self, group: str) -> str:
        """The Kafka group `group`'s offsets go to: its mapped name, else its own. Two rules that
        disagree on it are refused (GroupMapRefused)."""
        found = [(rule, new) for rule in self.rules if (new := rule.new_name(group)) is not None]
        if not found:
            return group
        rule, new = found[0]
        for other, other_new in found[1:]:
            if other_new != new:
                raise GroupMapRefused(f"group '{group}' is mapped twice: to '{new}' by "
                                      f"{rule.where} and to '{other_new}' by {other.where}")
        if not new:
            raise GroupMapRefused(f"group '{group}' maps to an empty name by {rule.where}")
        return new

    def resolve(self, groups: Iterable[str]) -> dict[str, str]:
        """old -> new for each of the selected `groups` that is renamed (the others keep their
        names); raises GroupMapRefused when two of them would meet in one Kafka group, naming
        both."""
        groups = sorted(set(groups))
        if not self.rules:
            return {}
        renamed: dict[str, str] = {}
        owner: dict[str, str] = {}
        for group in groups:
            new = self.new_name(group)
            if new != group:
                renamed[group] = new
        for group in groups:
            target = renamed.get(group, group)
            other = owner.setdefault(target, group)
            if other == group:
                continue
            first, second = sorted((other, group), key=lambda g: g in renamed)
            if first in renamed:
                raise GroupMapRefused(f"groups '{first}' and '{second}' are both mapped to "
                                      f"'{target}': one Kafka group cannot take the offsets of two")
            raise GroupMapRefused(f"group '{second}' is mapped to '{target}', the name group "
                                  f"'{first}' keeps (it is selected and no rule renames it): one "
                                  "Kafka group cannot take the offsets of two")
        return renamed

    def flags(self) -> list[str]:
        """The mapping as the command-line arguments that gave it, each flag and its value apart
        (`['--map-group', 'legacy-(.*)=\\1-v2', '--map-group-file', 'groups.csv']`)."""
        given = [arg for text in self.texts for arg in (FLAG, text)]
        return given + ([FILE_FLAG, str(self.file)] if self.file is not None else [])

    def to_json(self) -> list[dict[str, str]]:
        """The rules as JSON, for a plan's inputs and the journal."""
        return [{"old": rule.pattern, "new": rule.template, "from": rule.where}
                for rule in self.rules]


def chosen(settings: Any) -> GroupMap:
    """The mapping of a command, from its settings' `map_group` rules and `map_group_file`; the
    file read here, before any store. Raises ConfigError."""
    texts = tuple(getattr(settings, "map_group", ()))
    path = getattr(settings, "map_group_file", None)
    rules = tuple(parse_rule(text) for text in texts)
    if path is not None:
        rules += read_map_file(Path(path))
    return GroupMap(rules, texts, None if path is None else Path(path))


def flags_text(inputs: Mapping[str, Any]) -> str:
    """The mapping a plan was made with (its `inputs`), as the flags that give it again, quoted
    for a shell (` --map-group 'a=b'`), or "": advice that runs the plan repeats them."""
    return "".join(f" {shlex.quote(arg)}" for arg in (inputs.get("group_map") or {}).get("flags")
                   or [])


def renames_text(renamed: Mapping[str, str]) -> str:
    """A mapping in a message: its first renames, `a -> b`, or `no renames`."""
    first = ", ".join(f"{old} -> {new}" for old, new in sorted(renamed.items())[:3])
    return (first + (" ..." if len(renamed) > 3 else "")) or "no renames"


def renamed_text(group: str, renamed: Mapping[str, str]) -> str:
    """A group as output names it: `old -> new` when it is renamed, else its name alone."""
    new = renamed.get(group)
    return group if new is None else f"{group} -> {new}"


def refuse_unmapped(groups: Iterable[str], mapping: GroupMap,
                    journaled: Mapping[str, tuple[str, str]]) -> None:
    """Without a mapping, refuse the selected `groups` the journal shows moved into Kafka under
    another name (`journaled`: old -> (new, run)): judged by their own names they would read as
    never moved, and a move advised again. Raises GroupMapRefused naming the mapping to pass."""
    if mapping:
        return     # the mapping given decides (resolve checks it)
    moved = {g: journaled[g] for g in sorted(set(groups)) if g in journaled}
    if not moved:
        return
    shown = "; ".join(f"'{old}' into '{new}' by run {run}" for old, (new, run) in
                      list(moved.items())[:3]) + (" ..." if len(moved) > 3 else "")
    flags = " ".join(f"{FLAG} {shlex.quote(f'{old}={new}')}" for old, (new, _) in moved.items())
    raise GroupMapRefused(f"{len(moved)} selected group(s) the journal shows moved into Kafka "
                          f"under another name ({shown}): judged by their own names they would "
                          f"read as never moved; run it again with {flags}")
