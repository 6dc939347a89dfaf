"""The Kafka client properties file (`--command-config`, as kafka-consumer-groups.sh takes it) → kafka-python options.

Java properties are parsed with `java.util.Properties.load` semantics, then the
keys a Kafka operator uses are mapped onto kafka-python 3.x keyword options.
Secrets (passwords, JAAS lines, private keys) never appear in repr, errors or logs.
"""

from __future__ import annotations

import atexit
import os
import re
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from migrate.errors import ConfigError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SECRET_OPTIONS = {"sasl_plain_password", "ssl_password"}
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")
_INT_OPTIONS = {
    "request.timeout.ms": "request_timeout_ms", "retry.backoff.ms": "retry_backoff_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms", "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "connections.max.idle.ms": "connections_max_idle_ms", "metadata.max.age.ms": "metadata_max_age_ms",
    # Java's bound on an API call; kafka-python's nearest knob bounds reaching the cluster at all.
    "default.api.timeout.ms": "bootstrap_timeout_ms",
}
_STR_OPTIONS = {"client.id": "client_id", "sasl.kerberos.service.name": "sasl_kerberos_service_name",
                "sasl.kerberos.domain.name": "sasl_kerberos_domain_name"}


def _logical_lines(text: str):
    """(line number, logical line): comments and blanks dropped, backslash continuations joined."""
    lines = re.split(r"\r\n|\r|\n", text)  # Java's line ends only; str.splitlines() also splits on \x1c-\x1e
    i = 0
    while i < len(lines):
        start, line = i + 1, lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1:  # an odd number of trailing backslashes
            line = line[:-1] + (lines[i].lstrip(" \t\f") if i < len(lines) else "")
            i += 1
        yield start, line


def _unescape(text: str, source: str, line: int) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ConfigError("malformed \\uXXXX escape", source=source, line=line)
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse Java .properties text (java.util.Properties.load semantics); raises ConfigError with the line."""
    props: dict[str, str] = {}
    for number, line in _logical_lines(text):
        # The key ends at the first unescaped '=', ':' or whitespace.
        m = re.match(r"((?:\\.|[^\\=: \t\f])*)[ \t\f]*(?:[=:][ \t\f]*)?(.*)", line, re.S)
        key, value = m.group(1), m.group(2)
        props[_unescape(key, source, number)] = _unescape(value, source, number)
    return props


@dataclass(frozen=True)
class ClientConfig:
    """kafka-python keyword options from a properties file; `ignored` holds the keys not understood."""

    options: Mapping[str, object]
    ignored: tuple[str, ...]
    source: str
    _temp_files: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def secrets(self) -> tuple[str, ...]:
        """The secret option values (passwords), for redaction."""
        return tuple(str(v) for k, v in self.options.items() if k in _SECRET_OPTIONS and v)

    def redacted(self) -> dict[str, object]:
        return {k: ("***" if k in _SECRET_OPTIONS else v) for k, v in self.options.items()}

    def __repr__(self) -> str:
        return f"ClientConfig(source={self.source!r}, options={self.redacted()!r}, ignored={self.ignored!r})"

    __str__ = __repr__


_JAAS = re.compile(r"""\s*(\S+)\s+(required|requisite|sufficient|optional)\s*(.*?);?\s*$""", re.S)
_JAAS_OPTION = re.compile(r"""\s*([\w.]+)\s*=\s*("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^\s;]+)""", re.S)


def _parse_jaas(jaas: str, source: str) -> tuple[str, dict[str, str]]:
    """(login module, options) of a sasl.jaas.config line. Errors never echo the line: it holds a password."""
    m = _JAAS.match(jaas)
    if not m:
        raise ConfigError("sasl.jaas.config is not '<LoginModule> required key=\"value\" ...;'", source=source)
    module, rest, options = m.group(1), m.group(3), {}
    pos = 0
    while pos < len(rest.strip()):
        om = _JAAS_OPTION.match(rest, pos)
        if not om:
            raise ConfigError("sasl.jaas.config has an option that is not key=value (value not shown)", source=source)
        value = om.group(2)
        if value[:1] in "\"'":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[om.group(1)] = value
        pos = om.end()
    return module, options


def _pem_or_refuse(key: str, path: str, store_type: str | None, source: str) -> str:
    kind = (store_type or "").upper()
    if kind == "PEM" or (not kind and path.lower().endswith((".pem", ".crt", ".cer", ".key"))):
        return path
    # kafka-python (Python's ssl module) reads PEM only.
    stem = Path(path).stem
    raise ConfigError(
        f"{key} is a {kind or 'JKS/PKCS12'} store ({path}); kafka-python needs PEM files. Convert it:\n"
        f"  keytool -importkeystore -srckeystore {path} -destkeystore {stem}.p12 -deststoretype PKCS12\n"
        f"  openssl pkcs12 -in {stem}.p12 -nokeys -out {stem}.pem          # certificates\n"
        f"  openssl pkcs12 -in {stem}.p12 -nocerts -nodes -out {stem}-key.pem   # private key (keystores)\n"
        f"then set {key}={stem}.pem and {key.rsplit('.', 1)[0]}.type=PEM", source=source)


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


def _pem_lines(text: str) -> str:
    """PEM blocks with one base64 line per 64 characters, as OpenSSL needs them.

    Kafka's documented inline form continues the value over lines with backslashes, which
    `Properties` joins into one line ("-----BEGIN ...----- MIIE... -----END ...-----").
    """
    def rewrap(m: re.Match) -> str:
        body = m.group(2)
        if ":" in body:  # RFC 1421 headers (Proc-Type, DEK-Info): leave the block as it is
            return m.group(0)
        body = re.sub(r"\s+", "", body)
        lines = [body[i:i + 64] for i in range(0, len(body), 64)]
        return "\n".join([f"-----BEGIN {m.group(1)}-----", *lines, f"-----END {m.group(1)}-----"])

    return "\n".join(rewrap(m) for m in _PEM_BLOCK.finditer(text)) + "\n" if _PEM_BLOCK.search(text) else text


def _private_file(content: str, temp_files: list[str]) -> str:
    fd, path = tempfile.mkstemp(prefix="zk2kafka-", suffix=".pem")  # mkstemp creates it 0600
    with os.fdopen(fd, "w") as f:
        f.write(_pem_lines(content))
    temp_files.append(path)
    # A private key must not outlive the run (forked workers leave by os._exit and skip this).
    atexit.register(Path(path).unlink, missing_ok=True)
    return path


def check_tls(options: Mapping[str, object], source: str) -> None:
    """Load the PEM files as kafka-python will, so a wrong path or key password is a ConfigError at once.

    Later, kafka-python would retry the same failure until its bootstrap timeout, and with an
    encrypted key and no password OpenSSL would prompt for a pass phrase on the terminal.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cafile := options.get("ssl_cafile"):
        try:
            context.load_verify_locations(cafile)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"cannot load the CA certificates of ssl.truststore.* from {cafile}: "
                              f"{getattr(e, 'strerror', None) or e.reason or 'no PEM certificate in it'}",
                              source=source) from None
    if certfile := options.get("ssl_certfile"):
        if not os.access(str(certfile), os.R_OK) or not os.access(str(options["ssl_keyfile"]), os.R_OK):
            raise ConfigError(f"cannot read the ssl.keystore.* files {certfile}, {options['ssl_keyfile']}",
                              source=source)
        password = options.get("ssl_password")
        try:
            # A callable, never None: None lets OpenSSL ask for the pass phrase on the terminal.
            context.load_cert_chain(certfile, options["ssl_keyfile"], password=lambda: str(password or ""))
        except ssl.SSLError:
            given = "is wrong" if password else "is not set and the key is encrypted"
            raise ConfigError(f"cannot load the client key and certificate of ssl.keystore.*: ssl.key.password "
                              f"{given}, or the PEM does not hold a private key and its certificate",
                              source=source) from None


def load_client_config(path: str | os.PathLike) -> ClientConfig:
    """Read a --command-config file and map it onto kafka-python options; raises ConfigError."""
    source = str(path)
    try:
        props = parse_properties(Path(path).read_text(encoding="utf-8"), source)
    except OSError as e:
        raise ConfigError(f"cannot read the client properties file: {e.strerror}", source=source) from None
    except UnicodeDecodeError:
        raise ConfigError("the client properties file is not UTF-8 text", source=source) from None
    options: dict[str, object] = {}
    used: set[str] = set()
    temp_files: list[str] = []

    def take(key: str) -> str | None:
        if key in props:
            used.add(key)
            return props[key]
        return None

    if (protocol := take("security.protocol")) is not None:
        if protocol.upper() not in _PROTOCOLS:
            raise ConfigError(f"security.protocol must be one of {', '.join(_PROTOCOLS)}, got {protocol!r}",
                              source=source)
        options["security_protocol"] = protocol.upper()
    mechanism = take("sasl.mechanism")
    if mechanism is not None:
        if mechanism.upper() not in _MECHANISMS:
            raise ConfigError(f"sasl.mechanism must be one of {', '.join(_MECHANISMS)}, got {mechanism!r}",
                              source=source)
        options["sasl_mechanism"] = mechanism = mechanism.upper()
    if (jaas := take("sasl.jaas.config")) is not None:
        module, jaas_options = _parse_jaas(jaas, source)
        if module.endswith("PlainLoginModule"):
            options.setdefault("sasl_mechanism", "PLAIN")
        elif module.endswith("ScramLoginModule") and mechanism is None:
            raise ConfigError("a SCRAM login module needs sasl.mechanism=SCRAM-SHA-256 or SCRAM-SHA-512",
                              source=source)
        if "username" in jaas_options:
            options["sasl_plain_username"] = jaas_options["username"]
        if "password" in jaas_options:
            options["sasl_plain_password"] = jaas_options["password"]
        if "serviceName" in jaas_options:
            options["sasl_kerberos_service_name"] = jaas_options["serviceName"]
    for key, option in _STR_OPTIONS.items():
        if (value := take(key)) is not None:
            options[option] = value
    for key, option in _INT_OPTIONS.items():
        if (value := take(key)) is not None:
            if not value.strip().isdigit():
                raise ConfigError(f"{key} must be a whole number of milliseconds, got {value!r}", source=source)
            options[option] = int(value)
    if (servers := take("bootstrap.servers")) is not None:
        options["bootstrap_servers"] = [s.strip() for s in servers.split(",") if s.strip()]

    # TLS: PEM files, or PEM text inline (written to private temporary files).
    if (trust := take("ssl.truststore.location")) is not None:
        options["ssl_cafile"] = _pem_or_refuse("ssl.truststore.location", trust, take("ssl.truststore.type"), source)
        take("ssl.truststore.password")  # PEM trust stores have none; Java-only
    if (store := take("ssl.keystore.location")) is not None:
        pem = _pem_or_refuse("ssl.keystore.location", store, take("ssl.keystore.type"), source)
        options["ssl_certfile"] = options["ssl_keyfile"] = pem
    if (certs := take("ssl.truststore.certificates")) is not None:
        options["ssl_cafile"] = _private_file(certs, temp_files)
    if (chain := take("ssl.keystore.certificate.chain")) is not None:
        options["ssl_certfile"] = _private_file(chain, temp_files)
    if (key_pem := take("ssl.keystore.key")) is not None:
        options["ssl_keyfile"] = _private_file(key_pem, temp_files)
    for key in ("ssl.key.password", "ssl.keystore.password"):
        if (password := take(key)) is not None:
            options.setdefault("ssl_password", password)
    if (algorithm := take("ssl.endpoint.identification.algorithm")) is not None:
        options["ssl_check_hostname"] = algorithm.strip().lower() == "https"
    if any(k.startswith("ssl_") for k in options) and "security_protocol" not in options:
        raise ConfigError("SSL settings given but security.protocol is not SSL or SASL_SSL", source=source)

    ignored = tuple(sorted(k for k in props if k not in used))
    return ClientConfig(options, ignored, source, tuple(temp_files))
