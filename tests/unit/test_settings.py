"""Settings resolve flags > environment > TOML > defaults, check what they can, and hide secrets."""

from __future__ import annotations

import datetime
import io
import logging
import math
import os
import tempfile
import tomllib
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from migrate import cli
from migrate.durations import exact_duration
from migrate.errors import ConfigError, UnknownOption
from migrate.options import OPTIONS, OPTIONS_BY_NAME
from migrate.settings import Settings, load_settings


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
    cfg.write_text('group = ["^billing", "^audit$"]\nexclude-group = "test"\non-conflict = "max"\n')
    s = load_settings({"config": str(cfg)}, environ={})
    assert s.groups == ("^billing", "^audit$")
    assert s.exclude_groups == ("test",)
    assert s.on_conflict == "max"


@pytest.mark.parametrize("toml, message", [
    ('zookeepr = "x:1"', "unknown option 'zookeepr' \\(did you mean 'zookeeper'\\?\\); known: "),
    ('bootstrap_servers = "x:1"', "did you mean 'bootstrap-server'.* bootstrap-server, cache-dir, "),
    ("execute = true", "'execute' is not taken from a file: pass --execute on the command line"),
    ('resume = "R"', "pass --resume on the command line"),
    ("zookeeper = 5", "expected a string"),
    ('on-conflict = "newest"', "expected one of skip, zk, kafka, max, fail"),
    ('group = ["("]', "bad regular expression"),
    ("zk-tls = 'maybe'", "expected true or false"),
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
    ({"spark_shared_dir": "/no/such/dir"}, "--spark-shared-dir /no/such/dir: no such directory"),
])
def test_values_are_checked(flags, message):
    with pytest.raises(ConfigError, match=message):
        load_settings(flags, environ={})


def test_environment_values_are_typed_and_checked():
    s = load_settings({}, environ={"ZK2KAFKA_OUT_OF_RANGE": "clamp", "ZK2KAFKA_JSON": "0"})
    assert (s.out_of_range, s.json) == ("clamp", False)
    with pytest.raises(ConfigError, match=r"--out-of-range \(from environment\)"):
        load_settings({}, environ={"ZK2KAFKA_OUT_OF_RANGE": "wrap"})


def test_execute_comes_only_from_the_command_line():
    # An exported variable would turn every later dry run in that shell into a write.
    assert load_settings({}, environ={"ZK2KAFKA_EXECUTE": "yes"}).execute is False
    assert load_settings({"execute": True}, environ={}).execute is True


def test_settings_know_which_options_were_given(tmp_path: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('group = ["billing"]\n')
    s = load_settings({"config": str(cfg), "on_conflict": "zk"}, environ={"ZK2KAFKA_ZOOKEEPER": "zk:2181"})
    assert s.given == {"config", "groups", "on_conflict", "zookeeper"}


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


# ---- hostile TOML files (hypothesis): valid Settings or one ConfigError line, never another exception -------------

def _toml_string(s: str) -> str:
    return '"' + "".join(c if c >= " " and c not in '"\\\x7f' else f"\\u{ord(c):04x}" for c in s) + '"'


def _toml(value) -> str:
    """`value` as a TOML value (inline tables for dicts)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else {math.inf: "inf", -math.inf: "-inf"}.get(value, repr(value))
    if isinstance(value, (int, datetime.date, datetime.time)):   # datetime is a date
        return value.isoformat() if not isinstance(value, int) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_string(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return _toml_string(value)


UNICODE = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
OPTION_VALUES = {
    "str": st.sampled_from(["127.0.0.1:2181", "zk1:2181,zk2:2181/kafka", "h:1", "[::1]:9092", ""]),
    "path": st.sampled_from(["/tmp/x", "~", "~/s", "~nosuchuser-zk2kafka/x", "a\x00b", "", "."]),
    "int": st.sampled_from(["4", "²", "٣", " 7 ", "0", "9" * 30, "-1", "1e3"]),
    "duration": st.sampled_from(["30s", "5m", "0s", "9" * 400, "1e400", "1.5h", "10y", "500ms"]),
    "regexes": st.sampled_from(["^a", "(", "a{4294967296}", "(" * 5000 + ")" * 5000, "[", "\\"]),
    "mappings": st.sampled_from(["a=b", "legacy-(.*)=\\1-v2", "(=x", "a=", "=b", "a=\\2", "a=\\q", "noequals"]),
    "secret": st.sampled_from(["digest:u:p", "digest", ":", "x:"]),
    "choice": st.sampled_from(["text", "json", "skip", "max", "clamp", "last", "storm", "template", "zk", "broker"]),
    "bool": st.sampled_from(["yes", "off", "maybe", "1"]),
}
SCALAR = st.one_of(
    UNICODE, st.booleans(), st.integers(-2**63, 2**63 - 1), st.integers(-10**40, 10**40),
    st.floats(), st.dates(), st.times(), st.datetimes(timezones=st.none() | st.just(datetime.timezone.utc)))
KEYS = [o.name for o in OPTIONS] + [o.cli_flag.lstrip("-") for o in OPTIONS] + ["config", "verbosity", "Zookeeper"]


@st.composite
def toml_document(draw) -> bytes:
    """A TOML file: known and unknown keys, right and wrong types, nested tables, now and then broken bytes."""
    entries = {}
    for key in draw(st.lists(st.sampled_from(KEYS) | UNICODE, max_size=6, unique=True)):
        opt = OPTIONS_BY_NAME.get(key.replace("-", "_"))
        fitting = OPTION_VALUES[opt.kind] if opt else UNICODE
        entries[key] = draw(st.one_of(
            fitting, fitting.map(lambda v: [v]), SCALAR,
            st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(UNICODE, inner,
                                                                                             max_size=3),
                         max_leaves=6)))
    lines = []
    tables = {k: v for k, v in entries.items() if isinstance(v, dict) and draw(st.booleans())}
    lines += [f"{_toml_string(k)} = {_toml(v)}" for k, v in entries.items() if k not in tables]
    for k, v in tables.items():   # [table] sections after the plain keys
        lines += [f"[{_toml_string(k)}]", *(f"{_toml_string(sub)} = {_toml(x)}" for sub, x in v.items())]
    data = "\n".join(lines).encode()
    tomllib.loads(data.decode())   # the generator itself writes valid TOML; the damage below is deliberate
    damage = draw(st.sampled_from(["none"] * 6 + ["bytes", "truncate", "huge int", "replace"]))
    if damage == "bytes":
        at = draw(st.integers(0, len(data)))
        junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"=", b"[", b'"', b"\n[[x]]\n"]))
        data = data[:at] + junk + data[at:]
    elif damage == "truncate":
        data = data[:draw(st.integers(0, len(data)))]
    elif damage == "huge int":
        data += b"\nparallelism = " + b"9" * 5000
    elif damage == "replace":
        data = draw(st.binary(max_size=64))
    return data


def _config_file(data: bytes) -> Path:
    fd, name = tempfile.mkstemp(suffix=".toml")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return Path(name)


def _settings_or_config_error(flags: dict):
    try:
        return load_settings(flags, environ={})
    except ConfigError as e:
        assert str(e) and "\n" not in str(e) and e.exit_code == 2, str(e)
        return e


@settings(max_examples=300, deadline=None)
@given(toml_document())
def test_any_toml_config_is_settings_or_one_config_error_line(data):
    path = _config_file(data)
    try:
        _settings_or_config_error({"config": str(path)})
    finally:
        path.unlink()


@settings(max_examples=30, deadline=None)
@given(toml_document())
def test_cli_with_any_toml_config_exits_0_or_2_with_one_line_never_a_traceback(data):
    path = _config_file(data)
    out, err = io.StringIO(), io.StringIO()
    handlers = logging.getLogger().handlers[:]
    try:
        with tempfile.TemporaryDirectory() as state:
            expected = _settings_or_config_error({"config": str(path), "state_dir": state})
            with redirect_stdout(out), redirect_stderr(err):
                code = cli.main(["status", "--config", str(path), "--state-dir", state])
    finally:
        logging.getLogger().handlers[:] = handlers   # cli.main pointed logging at the captured stderr
        path.unlink()
    if isinstance(expected, ConfigError):
        # An unknown key is answered as an unknown flag is: the command's usage, then the error.
        usage = cli.build_parser().commands["status"].format_usage() if isinstance(expected, UnknownOption) else ""
        assert (code, err.getvalue()) == (2, f"{usage}zk2kafka: error: {expected}\n")
    else:
        assert code == 0 and ("no runs yet" in out.getvalue() or '"runs": []' in out.getvalue()), err.getvalue()


@pytest.mark.parametrize("toml, message", [
    (b'zookeeper = "\xff"', "not UTF-8 text"),
    (b"parallelism = " + b"9" * 5000, "a number too long to read"),      # tomllib's int() refuses it
    ('parallelism = "\u00b2"'.encode(), "expected a positive integer"),  # '²'.isdigit(), yet int('²') fails
    (b'zk-readers = "99999999999999999999999"', "expected a positive integer"),
    (b'state-dir = "~nosuchuser-zk2kafka/x"', "no such user"),
    (b'command-config = "a\\u0000b"', "NUL"),
    (b'group = ["a{4294967296}"]', "too large or too deeply nested"),
    (b'topic = "' + b"(" * 5000 + b")" * 5000 + b'"', "too large or too deeply nested"),
    (b'stop-after = "' + b"9" * 400 + b's"', "expected a duration"),
])
def test_hostile_values_found_by_hypothesis_are_config_errors(toml: bytes, message: str):
    path = _config_file(toml)
    try:
        with pytest.raises(ConfigError, match=message) as info:
            load_settings({"config": str(path)}, environ={})
    finally:
        path.unlink()
    assert "\n" not in str(info.value)


DURATION_OPTIONS = [o for o in OPTIONS if o.kind == "duration"]


@pytest.mark.parametrize("text, seconds", [
    ("1ms", 0.001), ("500ms", 0.5), ("1.5s", 1.5), (".5m", 30.0), ("2m", 120.0), ("6h", 21600.0), ("1d", 86400.0),
    ("10", 10.0), ("0.25", 0.25), (" 30 s ", 30.0), ("+5s", 5.0), ("3.", 3.0)])
def test_one_duration_grammar_for_every_duration_option_and_every_source(text, seconds, tmp_path):
    for opt in DURATION_OPTIONS:
        config = tmp_path / "zk2kafka.toml"
        config.write_text(f'{opt.cli_flag.lstrip("-")} = "{text}"\n')
        for flags, environ in (({opt.name: text}, {}), ({}, {opt.env_var: text}), ({"config": str(config)}, {})):
            if opt.floor is not None and seconds < opt.floor:   # read, then refused below its floor
                with pytest.raises(ConfigError, match=f"expected {exact_duration(opt.floor)} or more, got "):
                    load_settings(flags, environ=environ)
                continue
            assert getattr(load_settings(flags, environ=environ), opt.name) == pytest.approx(seconds), (opt.name, flags)


# The durations that pace work on a cluster, each with its floor: a typo of 42ms for 42m must not hammer it.
PACING = {"renew_every": 60.0, "rescan_every": 1.0}


def test_only_the_durations_that_pace_work_on_a_cluster_have_a_floor_each_with_why():
    assert {o.name: o.floor for o in DURATION_OPTIONS if o.floor is not None} == PACING
    for opt in DURATION_OPTIONS:
        assert bool(opt.floor_why) == (opt.floor is not None), opt.name
        if opt.floor is not None:
            assert f"at least {exact_duration(opt.floor)}" in opt.help.lower(), opt.name


@pytest.mark.parametrize("name", sorted(PACING))
def test_a_pacing_duration_below_its_floor_is_refused_from_every_source_with_why(name, tmp_path):
    opt = OPTIONS_BY_NAME[name]
    config = tmp_path / "zk2kafka.toml"
    config.write_text(f'{opt.cli_flag.lstrip("-")} = "42ms"\n')
    for flags, environ, source in (({name: "42ms"}, {}, "flag"), ({}, {opt.env_var: "42ms"}, "environment"),
                                   ({"config": str(config)}, {}, str(config))):
        with pytest.raises(ConfigError) as refused:
            load_settings(flags, environ=environ)
        assert str(refused.value) == (f"{opt.cli_flag} (from {source}): expected {exact_duration(opt.floor)} or more, "
                                      f"got '42ms': {opt.floor_why}")
        assert "\n" not in str(refused.value)
    floor = exact_duration(opt.floor)
    assert getattr(load_settings({name: floor}, environ={}), name) == opt.floor   # the floor itself is taken


@pytest.mark.parametrize("text", ["0", "0s", "0ms", "-5s", "-1", "-0.5m", "soon", "5y", "1.5.s", "s", "", "1e400",
                                  "9" * 400, "0.0001ms"])
def test_zero_negative_and_malformed_durations_are_one_error_naming_the_source(text):
    for opt in DURATION_OPTIONS:
        with pytest.raises(ConfigError) as flag_error:
            load_settings({opt.name: text}, environ={})
        assert str(flag_error.value) == (f"{opt.cli_flag} (from flag): expected a duration of 1ms or more, like 500ms, "
                                         f"1.5s, 30s, 5m, 6h or 1d (a bare number is seconds), got {text!r}")
        if text:
            with pytest.raises(ConfigError, match=r"\(from environment\): expected a duration of 1ms or more"):
                load_settings({}, environ={opt.env_var: text})


@pytest.mark.parametrize("seconds, shown", [(0.001, "1ms"), (0.5, "500ms"), (1.5, "1.5s"), (5.0, "5s"), (90.0, "90s"),
                                            (120.0, "2m"), (5400.0, "90m"), (86400.0, "1d"), (0.0015, "2ms")])
def test_a_duration_is_shown_as_given_not_rounded_to_another(seconds, shown):
    assert exact_duration(seconds) == shown


def test_the_selection_keeps_where_each_pattern_came_from(tmp_path):
    config = tmp_path / "zk2kafka.toml"
    config.write_text('exclude-group = ["scratch-.*"]\ntopic = "orders"\n')
    settings = load_settings({"groups": ["retired"], "config": str(config)},
                             environ={"ZK2KAFKA_QUIET_FOR": "90s"})
    assert settings.sources["groups"] == "flag"
    assert settings.sources["exclude_groups"] == settings.sources["topics"] == f"config file {config}"
    assert settings.sources["quiet_for"] == "environment ZK2KAFKA_QUIET_FOR"
    assert "leave_behind" not in settings.sources


def test_a_secret_of_an_earlier_call_in_the_same_process_is_not_hidden_in_the_next_ones_error(tmp_path):
    # cli.main is called in-process by tests and scripts: each call redacts its own secrets only.
    handlers = logging.getLogger().handlers[:]
    bad = tmp_path / "config.toml"
    bad.write_text("parallelism = \n")
    err = io.StringIO()
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            assert cli.main(["status", "--zk-auth", "digest:user:config", "--state-dir", str(tmp_path)]) == 0
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            assert cli.main(["status", "--config", str(bad), "--state-dir", str(tmp_path)]) == 2
    finally:
        logging.getLogger().handlers[:] = handlers
    assert f"{bad}: not valid TOML" in err.getvalue(), err.getvalue()
