"""Printed advice repeats the locations given as flags, so that it pastes into the shell that ran it."""

from __future__ import annotations

from migrate.advice import repeat_where, where_flags
from migrate.settings import load_settings

LINE = ("review it: `PLAN=$(zk2kafka diff --group a --json | jq -r .plan_id)`; then "
        "`zk2kafka migrate --execute --plan \"$PLAN\" --group a`; `zk2kafka status R` says why")


def test_flags_given_on_the_command_line_are_repeated_after_each_printed_command():
    settings = load_settings({"zookeeper": "zk1:2181/kafka", "zk_root": "/my consumers",
                              "bootstrap_server": "k1:9092", "state_dir": "/var/z2k"}, environ={})
    where = " --zookeeper zk1:2181/kafka --zk-root '/my consumers' --bootstrap-server k1:9092 --state-dir /var/z2k"
    assert repeat_where(LINE, settings) == (
        f"review it: `PLAN=$(zk2kafka diff{where} --group a --json | jq -r .plan_id)`; then "
        f"`zk2kafka migrate{where} --execute --plan \"$PLAN\" --group a`; `zk2kafka status{where} R` says why")


def test_the_environment_and_a_config_file_are_read_again_and_not_repeated(tmp_path):
    config = tmp_path / "z2k.toml"
    config.write_text('bootstrap-server = "k1:9092"\n')
    settings = load_settings({"config": str(config)}, environ={"ZK2KAFKA_ZOOKEEPER": "zk1:2181"})
    assert where_flags(settings, "diff") == f" --config {config}"


def test_only_what_the_printed_command_takes_and_never_a_secret_or_the_selection():
    settings = load_settings({"zookeeper": "zk1:2181", "zk_auth": "digest:u:secret", "groups": ["a"],
                              "zk_tls": True, "layout": "storm"}, environ={})
    assert where_flags(settings, "diff") == " --zookeeper zk1:2181 --layout storm --zk-tls"
    assert where_flags(settings, "status") == " --zookeeper zk1:2181 --zk-tls"   # --layout is the scan's


def test_prose_naming_a_command_and_the_sandbox_are_left_alone():
    settings = load_settings({"zookeeper": "zk1:2181"}, environ={})
    text = "metadata zk2kafka migrate R; `zk2kafka sandbox up`; `zk2kafka migrated` is no command"
    assert repeat_where(text, settings) == text
    assert repeat_where(LINE, None) == LINE


def test_an_option_the_advice_names_itself_is_not_repeated():
    settings = load_settings({"zookeeper": "zk1:2181", "zk_root": "/consumers", "bootstrap_server": "k1:9092"},
                             environ={})
    text = "move it: `zk2kafka diff --zookeeper zk9:2181 --zk-root /other/consumers`"
    assert repeat_where(text, settings) == (
        "move it: `zk2kafka diff --bootstrap-server k1:9092 --zookeeper zk9:2181 --zk-root /other/consumers`")


def test_renew_is_told_where_kafka_and_the_state_are_never_where_zookeeper_was():
    settings = load_settings({"zookeeper": "zk1:2181", "zk_root": "/x", "zk_tls": True, "layout": "storm",
                              "bootstrap_server": "k1:9092", "state_dir": "/var/z2k"}, environ={})
    assert repeat_where("`zk2kafka renew --execute --group a`", settings) == (
        "`zk2kafka renew --bootstrap-server k1:9092 --state-dir /var/z2k --execute --group a`")
