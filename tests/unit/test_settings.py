"""Settings resolve flags > environment > TOML > defaults, check what they can, and hide secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.errors import ConfigError
from migrate.settings import OPTIONS, Settings, load_settings


def test_defaults_match_the_design():
    s = load_settings({}, environ={})
    assert (s.zk_root, s.state_dir, s.spark_master, s.on_conflict, s.out_of_range) == (
        "/consumers", Path("zk2kafka-state"), "local[*]", "skip", "skip")
    assert s.execute is False and s.zookeeper is None and s.groups == ()


def test_flag_beats_environment_beats_file_beats_default(tmp_path: Path):
    cfg = tmp_path / "zk2kafka.toml"
    cfg.write_text('zookeeper = "file:2181"\nbootstrap-server = "file:9092"\nzk-root = "/file"\n'
                   'state_dir = "from-file"\n')
    env = {"ZK2KAFKA_ZOOKEEPER": "env:2181", "ZK2KAFKA_BOOTSTRAP_SERVER": "env:9092", "ZK2KAFKA_CONFIG": str(cfg)}
    s = load_settings({"zookeeper": "flag:2181"}, environ=env)
    assert s.zookeeper == "flag:2181"
    assert s.bootstrap_server == "env:9092"
    assert s.zk_root == "/file"
    assert s.state_dir == Path("from-file")
    assert s.spark_master == "local[*]"
    assert s.config == cfg


def test_file_takes_flag_spellings_and_lists(tmp_path: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('group = ["^billing", "^audit$"]\nexclude-group = "test"\non-conflict = "max"\nexecute = true\n')
    s = load_settings({"config": str(cfg)}, environ={})
    assert s.groups == ("^billing", "^audit$")
    assert s.exclude_groups == ("test",)
    assert (s.on_conflict, s.execute) == ("max", True)


@pytest.mark.parametrize("toml, message", [
    ('zookeepr = "x:1"', "unknown option 'zookeepr'"),
    ("zookeeper = 5", "expected a string"),
    ('on-conflict = "newest"', "expected one of skip, zk, kafka, max, fail"),
    ('group = ["("]', "bad regular expression"),
    ("execute = 'maybe'", "expected true or false"),
    ("zookeeper = ", "not valid TOML"),
])
def test_bad_config_file_is_a_clear_config_error(tmp_path: Path, toml: str, message: str):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml + "\n")
    with pytest.raises(ConfigError, match=message) as info:
        load_settings({"config": str(cfg)}, environ={})
    assert info.value.exit_code == 2


def test_missing_config_file_names_it(tmp_path: Path):
    with pytest.raises(ConfigError, match="nope.toml.*cannot read"):
        load_settings({"config": str(tmp_path / "nope.toml")}, environ={})


@pytest.mark.parametrize("flags, message", [
    ({"zk_root": "consumers"}, "--zk-root must be an absolute"),
    ({"zk_root": "/consumers/"}, "--zk-root must be an absolute"),
    ({"bootstrap_server": "localhost"}, "not host:port"),
    ({"zookeeper": "zk1:2181,zk2/kafka"}, "'zk2' is not host:port"),
    ({"zk_auth": "digest"}, "SCHEME:CREDENTIAL"),
])
def test_values_are_checked(flags, message):
    with pytest.raises(ConfigError, match=message):
        load_settings(flags, environ={})


def test_environment_values_are_typed_and_checked():
    s = load_settings({}, environ={"ZK2KAFKA_EXECUTE": "yes", "ZK2KAFKA_OUT_OF_RANGE": "clamp", "ZK2KAFKA_JSON": "0"})
    assert (s.execute, s.out_of_range, s.json) == (True, "clamp", False)
    with pytest.raises(ConfigError, match=r"--out-of-range \(from environment\)"):
        load_settings({}, environ={"ZK2KAFKA_OUT_OF_RANGE": "wrap"})


def test_chroot_in_connect_string_is_kept():
    s = load_settings({"zookeeper": "zk1:2181,zk2:2181/kafka/prod"}, environ={})
    assert s.zookeeper == "zk1:2181,zk2:2181/kafka/prod"


def test_require_names_flag_and_variable():
    with pytest.raises(ConfigError, match="--bootstrap-server is required.*ZK2KAFKA_BOOTSTRAP_SERVER"):
        Settings().require("bootstrap_server")


def test_secrets_never_show(tmp_path: Path):
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                     'username="alice" password="kafka-s3cret";\n')
    s = load_settings({"zk_auth": "digest:bob:zk-s3cret", "command_config": str(props),
                       "bootstrap_server": "127.0.0.1:9092"}, environ={})
    shown = repr(s) + str(s)
    assert "zk-s3cret" not in shown and "kafka-s3cret" not in shown
    assert s.zk_auth_data() == [("digest", "bob:zk-s3cret")]
    options = s.kafka_options()
    assert options["sasl_plain_password"] == "kafka-s3cret"
    assert options["bootstrap_servers"] == ["127.0.0.1:9092"]
    assert options["security_protocol"] == "SASL_PLAINTEXT"
    # What the logs redact: the passwords, and the digest credential kazoo logs whole.
    assert sorted(s.secrets()) == ["bob:zk-s3cret", "kafka-s3cret", "zk-s3cret"]


def test_every_option_has_help_and_a_settings_field():
    fields = set(Settings.__dataclass_fields__)
    for opt in OPTIONS:
        assert opt.help, opt.name
        assert opt.name in fields, opt.name
