"""--command-config: Java properties semantics and the mapping onto kafka-python, secrets never shown."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.errors import ConfigError
from migrate.kafka_config import check_tls, load_client_config, parse_properties


def test_java_properties_semantics():
    text = ("# comment\n! also a comment\n\n"
            "a=1\nb: 2\nc 3\n  d = four  \n"
            "e=one \\\n    two\n"
            "f=tab\\there\\nnew\n"
            "g\\=key=v\\:x\n"
            "h=\\u00e9t\\u00E9\n"
            "i=ends with backslash\\\\\n"
            "a=override\n"
            "empty=\n"
            "lonely\n")
    assert parse_properties(text) == {
        "a": "override", "b": "2", "c": "3", "d": "four  ", "e": "one two", "f": "tab\there\nnew",
        "g=key": "v:x", "h": "été", "i": "ends with backslash\\", "empty": "", "lonely": ""}


def test_bad_unicode_escape_names_the_line():
    with pytest.raises(ConfigError, match=r"client.properties:3: malformed \\uXXXX"):
        parse_properties("a=1\nb=2\nc=\\u12G4\n", "client.properties")


def _escape(s: str, key: bool) -> str:
    out = []
    for i, c in enumerate(s):
        if c in "\\=:#!" or (c == " " and (key or i == 0)):
            out.append("\\" + c)
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        else:
            out.append(c)
    return "".join(out)


@given(st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12),
                       st.text(st.characters(blacklist_categories=("Cs",)), max_size=20), max_size=8))
def test_round_trip_of_escaped_properties(props):
    text = "".join(f"{_escape(k, True)}={_escape(v, False)}\n" for k, v in props.items())
    assert parse_properties(text) == props


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return path


def test_sasl_plain_and_scram(tmp_path: Path):
    plain = load_client_config(write(tmp_path, (
        "security.protocol=sasl_ssl\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="alice" password="s3cr=t;x y";\n'
        "ssl.truststore.location=/etc/kafka/ca.pem\nssl.truststore.type=PEM\n"
        "ssl.endpoint.identification.algorithm=\nclient.id=zk2kafka\nrequest.timeout.ms=30000\n"
        "group.id=ignored-here\n")))
    assert plain.options == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
        "sasl_plain_password": "s3cr=t;x y", "ssl_cafile": "/etc/kafka/ca.pem", "ssl_check_hostname": False,
        "client_id": "zk2kafka", "request_timeout_ms": 30000}
    assert plain.ignored == ("group.id",)
    scram = load_client_config(write(tmp_path, (
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        "username='bob' password=\"p\\\\\"w\";\n")))
    assert (scram.options["sasl_mechanism"], scram.options["sasl_plain_username"],
            scram.options["sasl_plain_password"]) == ("SCRAM-SHA-512", "bob", 'p"w')


def test_scram_without_mechanism_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="SCRAM login module needs sasl.mechanism"):
        load_client_config(write(tmp_path, "sasl.jaas.config=x.ScramLoginModule required username=u password=p;\n"))


def test_secrets_stay_out_of_repr_and_errors(tmp_path: Path):
    config = load_client_config(write(tmp_path, (
        "security.protocol=SSL\nssl.key.password=key-s3cret\n"
        'sasl.jaas.config=x.PlainLoginModule required username="u" password="jaas-s3cret";\n')))
    shown = repr(config) + str(config) + repr(config.redacted())
    assert "key-s3cret" not in shown and "jaas-s3cret" not in shown
    with pytest.raises(ConfigError) as info:
        load_client_config(write(tmp_path,
                                 'sasl.jaas.config=x.PlainLoginModule required password="jaas-s3cret" junk\n'))
    assert "jaas-s3cret" not in str(info.value)


def test_jks_store_gets_conversion_commands(tmp_path: Path):
    with pytest.raises(ConfigError, match="keytool -importkeystore -srckeystore /etc/kafka/truststore.jks") as info:
        load_client_config(write(tmp_path,
                                 "security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n"))
    assert "openssl pkcs12" in str(info.value) and "ssl.truststore.type=PEM" in str(info.value)


def test_inline_pem_goes_to_private_files(tmp_path: Path):
    config = load_client_config(write(tmp_path, (
        "security.protocol=SSL\nssl.truststore.type=PEM\n"
        "ssl.truststore.certificates=-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\n"
        "ssl.keystore.key=-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\n")))
    for option in ("ssl_cafile", "ssl_keyfile"):
        path = Path(config.options[option])
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert path.read_text().startswith("-----BEGIN")


@pytest.mark.parametrize("text, message", [
    ("security.protocol=TLS\n", "security.protocol must be one of"),
    ("sasl.mechanism=MD5\n", "sasl.mechanism must be one of"),
    ("request.timeout.ms=soon\n", "request.timeout.ms must be a whole number"),
    ("ssl.keystore.location=/k.pem\n", "security.protocol is not SSL"),
])
def test_bad_values_are_config_errors(tmp_path: Path, text: str, message: str):
    with pytest.raises(ConfigError, match=message):
        load_client_config(write(tmp_path, text))


def test_missing_file_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="cannot read the client properties file"):
        load_client_config(tmp_path / "nope.properties")


# ---- hostile properties files (hypothesis): a ClientConfig or a ConfigError, and no password ever shown ------

# Characters that trip the properties grammar, mixed with any text.
TRICKY = st.sampled_from(list("\\=: \t\f#!\"';{}\r\n") + ["\\u", "\\u00", "\\uD800", "\\uDE00", "\\\n", "\u2028",
                                                          "\u202e", "\x00", "é", "€", "²", "٣"])
PIECE = st.one_of(TRICKY, st.characters(exclude_categories=("Cs",)))
TEXT = st.lists(PIECE, max_size=12).map("".join)
# Every password starts with a marker that nothing else in a generated file holds.
PASSWORD = st.lists(PIECE, max_size=8).map(lambda pieces: "Pw9!" + "".join(pieces))
SEPARATOR = st.sampled_from(["=", ":", " ", " = ", "\t: "])
VALUES = {
    "security.protocol": st.sampled_from(["PLAINTEXT", "SSL", "sasl_ssl", "SASL_PLAINTEXT", "TLS", "", "ſsl"]) | TEXT,
    "sasl.mechanism": st.sampled_from(["PLAIN", "SCRAM-SHA-256", "scram-sha-512", "GSSAPI", "MD5", ""]) | TEXT,
    "request.timeout.ms": st.one_of(st.integers(-10, 2**64).map(str), TEXT, st.sampled_from(
        ["²", "٣", "1e3", " 30000 ", "", "9" * 5000, "0x10", "30000ms", str(2**63)])),
    "ssl.truststore.location": st.sampled_from(["/etc/kafka/ca.pem", "/etc/kafka/truststore.jks", "ks.p12",
                                                "C:\\\\certs\\\\ca.crt", ""]) | TEXT,
    "ssl.keystore.location": st.sampled_from(["/etc/kafka/client.pem", "/etc/kafka/keystore.jks", "k.key"]) | TEXT,
    "ssl.truststore.type": st.sampled_from(["JKS", "PKCS12", "PEM", "pem", "BCFKS", ""]) | TEXT,
    "ssl.keystore.type": st.sampled_from(["JKS", "PKCS12", "PEM"]) | TEXT,
    "ssl.truststore.certificates": st.sampled_from(["-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----",
                                                    "\\uD83D\\uDE00"]) | TEXT,
    "ssl.endpoint.identification.algorithm": st.sampled_from(["https", "", "HTTPS"]) | TEXT,
    "client.id": TEXT, "bootstrap.servers": TEXT, "sasl.kerberos.service.name": TEXT,
}
SECRET_KEYS = ("ssl.key.password", "ssl.keystore.password", "ssl.truststore.password", "ssl.keystore.key")
MODULES = st.sampled_from(["org.apache.kafka.common.security.plain.PlainLoginModule",
                           "org.apache.kafka.common.security.scram.ScramLoginModule",
                           "com.sun.security.auth.module.Krb5LoginModule", "x"]) | TEXT
SUFFIX = st.sampled_from(["", "", "", "\\", "\\u", "\\u12", " \\"])   # "\\": the line runs on into the next one


def _jaas_quoted(value: str, quote: str) -> str:
    return quote + value.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


@st.composite
def jaas_line(draw, password: str) -> str:
    """A sasl.jaas.config setting holding `password`: well formed, continued over lines, or broken."""
    quoted = [_jaas_quoted(password, '"'), _jaas_quoted(password, "'"), password]   # the last one bare
    options = ["username=" + _jaas_quoted(draw(TEXT), '"'), "password=" + draw(st.sampled_from(quoted))]
    options += draw(st.lists(st.builds("{}={}".format, st.sampled_from(["serviceName", "x.y", "debug"]) | TEXT, TEXT),
                             max_size=2))
    options = draw(st.permutations(options))
    head = f"{draw(MODULES)} {draw(st.sampled_from(['required', 'optional', 'REQUIRED', '', 'requird']))}"
    end = draw(st.sampled_from([";", "", ";;", " junk", ';"']))
    form = draw(st.sampled_from(["one line", "continued", "pasted over lines"]))
    if form == "one line":
        return "sasl.jaas.config=" + _escape(" ".join([head, *options]) + end, False)
    if form == "continued":
        return "sasl.jaas.config=" + " \\\n    ".join(_escape(part, False) for part in [head, *options]) + end
    return "sasl.jaas.config=" + "\n    ".join([head, *options]) + end   # the JAAS-file habit: lines without \


@st.composite
def properties_file(draw) -> tuple[bytes, list[str]]:
    """(file bytes, the passwords in it)."""
    passwords: list[str] = []
    lines = []
    for kind in draw(st.lists(st.sampled_from(["known", "secret", "jaas", "garbage", "comment"]), max_size=10)):
        if kind == "known":
            key = draw(st.sampled_from(sorted(VALUES)))
            lines.append(key + draw(SEPARATOR) + draw(VALUES[key]) + draw(SUFFIX))
        elif kind == "secret":
            passwords.append(password := draw(PASSWORD))
            raw = draw(st.booleans()) and "\n" not in password and "\r" not in password
            written = password if raw else _escape(password, False)
            lines.append(draw(st.sampled_from(SECRET_KEYS)) + draw(SEPARATOR) + written)
        elif kind == "jaas":
            passwords.append(password := draw(PASSWORD))
            lines.append(draw(jaas_line(password)))
        elif kind == "comment":
            lines.append(draw(st.sampled_from(["# ", "! ", "  # "])) + draw(TEXT))
        else:
            lines.append(draw(TEXT) + draw(SUFFIX))
    text = draw(st.sampled_from(["\n", "\r\n", "\r"])).join(lines) + draw(st.sampled_from(["", "\n", "\\", "\\u00"]))
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:   # now and then a byte that is not UTF-8
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + data[at:]
    return data, passwords


@settings(max_examples=400, deadline=None)
@given(properties_file())
def test_any_properties_file_is_a_client_config_or_a_config_error_and_no_password_shows(tmp_path_factory, generated):
    data, passwords = generated
    path = tmp_path_factory.mktemp("props") / "client.properties"
    path.write_bytes(data)
    try:
        config = load_client_config(path)
    except ConfigError as e:
        shown = str(e)
    else:
        shown = repr(config) + str(config) + repr(config.redacted())
        for temp in config._temp_files:
            os.unlink(temp)
    for password in passwords:
        assert password not in shown


@pytest.mark.parametrize("text", [
    # A stray trailing backslash runs the line on into the next one: Java joins them too.
    "security.protocol=TLS \\\nssl.key.password=Pw9!leak\n",
    "request.timeout.ms=soon\\\nssl.keystore.password=Pw9!leak\n",
    "security.protocol=SSL\nssl.truststore.location=C:\\\\certs\\\nssl.truststore.password=Pw9!leak\n",
    "security.protocol=SSL\nclient.id=x\\\nssl.key.password=Pw9!leak\n",
    "sasl.jaas.config=x.PlainLoginModule required username=\\\nssl.key.password=Pw9!leak\n",
])
def test_a_value_that_swallowed_the_next_line_is_never_echoed(tmp_path: Path, text: str):
    try:
        shown = repr(load_client_config(write(tmp_path, text)))
    except ConfigError as e:
        shown = str(e)
        assert "trailing backslash" in shown
    assert "Pw9!leak" not in shown


def test_pem_key_pasted_without_continuations_stays_out_of_repr(tmp_path: Path):
    config = load_client_config(write(tmp_path, (
        "security.protocol=SSL\nssl.keystore.key=-----BEGIN PRIVATE KEY-----\n"
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\ngroup.id=g\n")))
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in repr(config)
    assert "'group.id'" in repr(config) and "2 line(s) that are no property name" in repr(config)
    os.unlink(config.options["ssl_keyfile"])


@pytest.mark.parametrize("text, message", [
    ("request.timeout.ms=²\n", "whole number of milliseconds"),          # str.isdigit() says yes, int() no
    ("request.timeout.ms=٣\n", "whole number of milliseconds"),          # Java takes ASCII digits only
    ("request.timeout.ms=" + "9" * 5000 + "\n", "whole number of milliseconds"),   # int() refuses > 4,300 digits
    (f"retry.backoff.ms={2**63}\n", "whole number of milliseconds"),
    ("security.protocol=SSL\nssl.keystore.key=\\uD800\n", "half of a surrogate pair"),
    ("client.id=\\uDE00\\uD83D\n", "half of a surrogate pair"),
])
def test_odd_numbers_and_escapes_are_config_errors(tmp_path: Path, text: str, message: str):
    with pytest.raises(ConfigError, match=message):
        load_client_config(write(tmp_path, text))


def test_surrogate_pair_escapes_make_one_character():
    assert parse_properties("client.id=\\uD83D\\uDE00\n") == {"client.id": "\U0001F600"}


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> dict[str, Path]:
    """A CA and a client certificate whose key is encrypted with TLS_KEY_PASSWORD (openssl, as the sandbox
    makes them)."""
    from migrate.sandbox.tls import make_tls

    return make_tls(tmp_path_factory.mktemp("tls"))


def _ssl_options(tls: dict[str, Path], password: str | None) -> dict[str, object]:
    options = {"security_protocol": "SSL", "ssl_cafile": str(tls["ca"]), "ssl_certfile": str(tls["client"]),
               "ssl_keyfile": str(tls["client"])}
    return options if password is None else {**options, "ssl_password": password}


def test_check_tls_loads_the_files_as_kafka_python_will(tls):
    from migrate.sandbox.tls import TLS_KEY_PASSWORD

    check_tls(_ssl_options(tls, TLS_KEY_PASSWORD), "client.properties")
    with pytest.raises(ConfigError, match=r"client.properties: .*ssl.key.password is wrong") as info:
        check_tls(_ssl_options(tls, "not-the-password"), "client.properties")
    assert "not-the-password" not in str(info.value)
    # No password for an encrypted key: an error, never OpenSSL's pass phrase prompt on the terminal.
    with pytest.raises(ConfigError, match="ssl.key.password is not set and the key is encrypted"):
        check_tls(_ssl_options(tls, None), "client.properties")
    with pytest.raises(ConfigError, match="cannot load the CA certificates .* No such file"):
        check_tls({**_ssl_options(tls, TLS_KEY_PASSWORD), "ssl_cafile": "/nonexistent/ca.pem"}, "client.properties")


def test_inline_pem_continued_over_lines_as_kafka_documents_it(tmp_path: Path, tls):
    """Kafka's docs continue inline PEM with backslashes; Properties joins that into one line OpenSSL cannot read."""
    from migrate.sandbox.tls import TLS_KEY_PASSWORD

    def inline(pem: str) -> str:
        return " \\\n    ".join(pem.strip().splitlines())

    client = tls["client"].read_text()
    cut = client.index("-----BEGIN CERTIFICATE-----")
    config = load_client_config(write(tmp_path, (
        "security.protocol=SSL\nssl.truststore.type=PEM\nssl.keystore.type=PEM\n"
        f"ssl.truststore.certificates={inline(tls['ca'].read_text())}\n"
        f"ssl.keystore.key={inline(client[:cut])}\n"
        f"ssl.keystore.certificate.chain={inline(client[cut:])}\n"
        f"ssl.key.password={TLS_KEY_PASSWORD}\n")))
    check_tls(config.options, config.source)
    assert Path(config.options["ssl_cafile"]).read_text() == tls["ca"].read_text()


def test_inline_private_key_files_are_removed_when_the_process_ends(tmp_path: Path):
    path = write(tmp_path, "security.protocol=SSL\n"
                           "ssl.keystore.key=-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\n")
    code = ("from migrate.kafka_config import load_client_config; "
            f"print(load_client_config({str(path)!r}).options['ssl_keyfile'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parents[2])
    written = Path(done.stdout.strip())
    assert written.name.startswith("zk2kafka-") and not written.exists()
