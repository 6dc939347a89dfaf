"""--command-config: Java properties semantics and the mapping onto kafka-python, secrets never shown."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
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
        load_client_config(write(tmp_path, 'sasl.jaas.config=x.PlainLoginModule required password="jaas-s3cret" junk\n'))
    assert "jaas-s3cret" not in str(info.value)


def test_jks_store_gets_conversion_commands(tmp_path: Path):
    with pytest.raises(ConfigError, match="keytool -importkeystore -srckeystore /etc/kafka/truststore.jks") as info:
        load_client_config(write(tmp_path, "security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n"))
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
        path.unlink()


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


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> dict[str, Path]:
    """A CA and a client certificate whose key is encrypted with TLS_KEY_PASSWORD (openssl, as the sandbox makes them)."""
    from migrate.sandbox.cluster import make_tls

    return make_tls(tmp_path_factory.mktemp("tls"))


def _ssl_options(tls: dict[str, Path], password: str | None) -> dict[str, object]:
    options = {"security_protocol": "SSL", "ssl_cafile": str(tls["ca"]), "ssl_certfile": str(tls["client"]),
               "ssl_keyfile": str(tls["client"])}
    return options if password is None else {**options, "ssl_password": password}


def test_check_tls_loads_the_files_as_kafka_python_will(tls):
    from migrate.sandbox.cluster import TLS_KEY_PASSWORD

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
    from migrate.sandbox.cluster import TLS_KEY_PASSWORD

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
    code = f"from migrate.kafka_config import load_client_config; print(load_client_config({str(path)!r}).options['ssl_keyfile'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parents[2])
    written = Path(done.stdout.strip())
    assert written.name.startswith("zk2kafka-") and not written.exists()
