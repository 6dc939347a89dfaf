"""The group mapping (migrate/group_map.py): OLD=NEW rules and the old,new file, what each group
maps to, and the refusals, each one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate import cli
from migrate.errors import ConfigError
from migrate.group_map import GroupMap, GroupMapRefused, chosen, parse_rule, read_map_file
from migrate.settings import load_settings


def mapping(*texts: str) -> GroupMap:
    return GroupMap(tuple(parse_rule(t) for t in texts), texts)


def test_old_is_a_full_match_and_new_takes_its_groups():
    rules = mapping(r"legacy-(.*)=\1-v2", r"(?P<region>eu|us)\.billing=billing-\g<region>")
    assert rules.new_name("legacy-billing") == "billing-v2"
    assert rules.new_name("eu.billing") == "billing-eu"
    # A full match, as --group: neither a prefix nor a substring is renamed.
    assert rules.new_name("xlegacy-billing") == "xlegacy-billing"
    assert rules.new_name("eu.billing.old") == "eu.billing.old"
    assert mapping(r"a(b)?c=x\1y").new_name("ac") == "xy"     # a group not in the match is empty
    assert mapping(r"(a)=\\\1\g<0>").new_name("a") == "\\aa"  # \\ is a backslash, \g<0> the whole


def test_the_rule_is_split_at_its_last_equals_sign():
    assert parse_rule("(?=a)a=b").new_name("a") == "b"


@pytest.mark.parametrize("text, says", [
    ("billing", "expected OLD=NEW"),
    ("=billing", "expected OLD=NEW"),
    ("billing=", "NEW is empty"),
    ("(billing=x", "bad regular expression '(billing'"),
    (r"billing=\1", r"names group '\1', and OLD 'billing' has 0 group(s)"),
    (r"(?P<a>x)=\g<b>", "named a"),
    (r"(x)=\n", r"holds '\n'"),
])
def test_a_rule_that_cannot_work_is_refused_as_given(text, says):
    with pytest.raises(ConfigError) as refused:
        parse_rule(text)
    assert says in str(refused.value) and f"'{text}'" in str(refused.value)   # as typed, not escaped
    assert refused.value.exit_code == 2


def test_groups_no_rule_matches_keep_their_names():
    rules = mapping("a=x")
    assert rules.resolve(["a", "b", "c"]) == {"a": "x"}
    assert GroupMap().resolve(["a"]) == {} and not GroupMap()


def test_two_old_groups_onto_one_new_group_are_refused_naming_both():
    with pytest.raises(GroupMapRefused, match="'eu.billing' and 'us.billing' are both mapped "
                                              "to 'billing'"):
        mapping(r"(eu|us)\.billing=billing").resolve(["us.billing", "eu.billing", "other"])


def test_a_mapping_onto_the_name_another_selected_group_keeps_is_refused():
    with pytest.raises(GroupMapRefused, match="'legacy-billing' is mapped to 'billing', the name "
                                              "group 'billing' keeps"):
        mapping(r"legacy-(.*)=\1").resolve(["billing", "legacy-billing"])
    # A chain or a swap sends no two groups to one name: allowed.
    assert mapping("a=b", "b=c").resolve(["a", "b"]) == {"a": "b", "b": "c"}
    assert mapping("a=b", "b=a").resolve(["a", "b"]) == {"a": "b", "b": "a"}


def test_a_new_name_that_comes_out_empty_is_refused():
    with pytest.raises(GroupMapRefused, match=r"'legacy-' maps to an empty name by --map-group"):
        mapping(r"legacy-(.*)=\1").resolve(["legacy-"])


def test_two_rules_that_disagree_on_a_group_are_refused_naming_both():
    rules = mapping(r"legacy-(.*)=\1-v2", "legacy-billing=billing-service", "legacy-.*=\\g<0>")
    with pytest.raises(GroupMapRefused, match=r"'legacy-billing' is mapped twice: to "
                                              r"'billing-v2' by --map-group .* and to "
                                              r"'billing-service' by --map-group"):
        rules.resolve(["legacy-billing"])
    assert mapping("a=x", "(a)=x").resolve(["a"]) == {"a": "x"}   # agreeing rules are one


def test_the_file_maps_literal_names(tmp_path: Path):
    f = tmp_path / "groups.csv"
    f.write_text('a.b,new-a\n\n"with,comma",x\\1\n')
    rules = GroupMap(read_map_file(f))
    assert rules.resolve(["a.b", "axb", "with,comma"]) == {"a.b": "new-a", "with,comma": "x\\1"}


@pytest.mark.parametrize("text, line, says", [
    ("a,b\nc\n", 2, "expected old,new (two names), got 1 field(s): 'c'"),
    ("a,b,c\n", 1, "got 3 field(s)"),
    ("a,b\n,c\n", 2, "old name is empty"),
    ("a,\n", 1, "new name is empty"),
    ("a,x\nb,y\na,z\n", 3, "'a' is mapped again (first on line 1)"),
    ("a,x\n\nb,x\n", 3, "'b' and 'a' (line 1) are both mapped to 'x'"),
    ('a,b\n"c,d\n', 2, "not a CSV line"),
])
def test_a_bad_line_of_the_file_is_named_with_its_number(tmp_path: Path, text, line, says):
    f = tmp_path / "groups.csv"
    f.write_text(text)
    with pytest.raises(ConfigError) as refused:
        read_map_file(f)
    assert str(refused.value).startswith(f"{f}:{line}: ") and says in str(refused.value)


def test_a_file_that_cannot_be_read_is_one_line(tmp_path: Path):
    with pytest.raises(ConfigError, match="--map-group-file .*missing.csv: cannot read it"):
        read_map_file(tmp_path / "missing.csv")


def test_flags_and_file_make_one_mapping_and_give_themselves_again(tmp_path: Path):
    f = tmp_path / "groups.csv"
    f.write_text("solo,solo-v2\n")
    settings = load_settings({"map_group": [r"legacy-(.*)=\1-v2"], "map_group_file": str(f)},
                             environ={})
    rules = chosen(settings)
    assert rules.resolve(["legacy-x", "solo", "other"]) == {"legacy-x": "x-v2",
                                                            "solo": "solo-v2"}
    assert rules.flags() == ["--map-group", r"legacy-(.*)=\1-v2", "--map-group-file", str(f)]


def test_the_config_file_takes_the_mapping_like_other_options(tmp_path: Path):
    cfg = tmp_path / "zk2kafka.toml"
    cfg.write_text("map-group = ['legacy-(.*)=\\1-v2', 'a=b']\n")
    assert load_settings({"config": str(cfg)}, environ={}).map_group == (
        r"legacy-(.*)=\1-v2", "a=b")
    cfg.write_text("map-group = ['a=\\2']\n")
    with pytest.raises(ConfigError, match=rf"--map-group 'a=\\2' \(from {cfg}\): NEW"):
        load_settings({"config": str(cfg)}, environ={})


def test_a_bad_rule_on_the_command_line_exits_2_before_anything_is_read(capsys):
    code = cli.main(["diff", "--map-group", "(x=y", "--zookeeper", "127.0.0.1:1",
                     "--bootstrap-server", "127.0.0.1:1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "bad regular expression '(x'" in err[0]


@pytest.mark.parametrize("argv, says", [
    (["rollback", "r1"], "a run's group mapping is the one its journal recorded"),
    (["verify", "--run", "r1"], "a run's group mapping is the one its journal recorded"),
    (["migrate", "--resume", "r1"], "a run's group mapping is the one its journal recorded")])
def test_a_mapping_from_the_config_file_is_refused_where_it_would_not_be_applied(tmp_path: Path, capsys, argv,
                                                                                  says):
    # A journaled run takes the mapping it recorded: a rename meant in the config file must not be passed over.
    cfg = tmp_path / "zk2kafka.toml"
    cfg.write_text("map-group = ['legacy-(.*)=\\\\1-v2']\n")
    code = cli.main([*argv, "--config", str(cfg), "--zookeeper", "127.0.0.1:1",
                     "--bootstrap-server", "127.0.0.1:1", "--state-dir", str(tmp_path / "state")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"--map-group from config file {cfg}: {says}" in err[0]
