"""The Kafka client properties file → kafka-python options.

The file is `--command-config`, as kafka-consumer-groups.sh takes it.

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
from typing import NamedTuple

from migrate.errors import ConfigError

_LONG_MAX = 2**63 - 1
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SECRET_OPTIONS = {"sasl_plain_password", "ssl_password"}
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")
_INT_OPTIONS = {
    "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    # Java's bound on an API call; kafka-python's nearest knob bounds reaching the cluster at all.
    "default.api.timeout.ms": "bootstrap_timeout_ms",
}
_STR_OPTIONS = {"client.id": "client_id",
                "sasl.kerberos.service.name": "sasl_kerberos_service_name",
                "sasl.kerberos.domain.name": "sasl_kerberos_domain_name"}
# Where the free-text options come from (the others are checked enums, numbers or private
# temporary files).
_TEXT_ORIGINS = {**{option: (key,) for key, option in _STR_OPTIONS.items()},
                 "sasl_plain_username": ("sasl.jaas.config",),
                 "sasl_kerberos_service_name": ("sasl.kerberos.service.name", "sasl.jaas.config"),
                 "bootstrap_servers": ("bootstrap.servers",),
                 "ssl_cafile": ("ssl.truststore.location",),
                 "ssl_certfile": ("ssl.keystore.location",),
                 "ssl_keyfile": ("ssl.keystore.location",)}


class _LogicalLine(NamedTuple):
    number: int  # of its first physical line
    text: str
    continued: bool  # joined from several physical lines


class _Parsed(NamedTuple):
    props: dict[str, str]
    continued: set[str]  # the keys whose value was continued over several lines


def _logical_lines(text: str):
    """The logical lines of `text`: comments and blanks dropped, backslash continuations joined."""
    # Java's line ends only; str.splitlines() also splits on \x1c-\x1e.
    lines = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(lines):
        start, line = i + 1, lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        continued = False
        # an odd number of trailing backslashes
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            line = line[:-1] + (lines[i].lstrip(" \t\f") if i < len(lines) else "")
            i += 1
            continued = True
        yield _LogicalLine(start, line, continued)


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
    text = "".join(out)
    if any("\ud800" <= c <= "\udfff" for c in text):
        try:  # Java strings are UTF-16: \\uD83D\\uDE00 is one character, a lone half is none
            text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError:
            raise ConfigError("a \\uXXXX escape is half of a surrogate pair",
                              source=source, line=line) from None
    return text


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse Java .properties text (java.util.Properties.load semantics).

    Raises ConfigError naming the line.
    """
    return _parse(text, source).props


def _parse(text: str, source: str) -> _Parsed:
    """The properties, and the keys whose value was continued over several lines."""
    props: dict[str, str] = {}
    continued: set[str] = set()
    for line in _logical_lines(text):
        # The key ends at the first unescaped '=', ':' or whitespace.
        m = re.match(r"((?:\\.|[^\\=: \t\f])*)[ \t\f]*(?:[=:][ \t\f]*)?(.*)", line.text, re.S)
        key = _unescape(m.group(1), source, line.number)
        props[key] = _unescape(m.group(2), source, line.number)
        if line.continued:
            continued.add(key)
        else:
            continued.discard(key)
    return _Parsed(props, continued)


@dataclass(frozen=True)
class ClientConfig:
    """kafka-python keyword options from a properties file; `ignored`: the keys not understood."""

    options: Mapping[str, object]
    ignored: tuple[str, ...]
    source: str
    _temp_files: tuple[str, ...] = field(default=(), repr=False, compare=False)
    # options taken from continued lines
    _hidden: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def secrets(self) -> tuple[str, ...]:
        """The secret option values (passwords), for redaction."""
        return tuple(str(v) for k, v in self.options.items() if k in _SECRET_OPTIONS and v)

    def redacted(self) -> dict[str, object]:
        """The options, secrets shown as ***.

        Values that ran on over several lines are hidden too: they may hold one.
        """
        return {k: ("***" if k in _SECRET_OPTIONS or k in self._hidden else v)
                for k, v in self.options.items()}

    def __repr__(self) -> str:
        # A line that is no property name is most likely a value that lost its key, e.g. PEM key
        # material pasted without continuation backslashes: it is counted, never shown.
        names = tuple(k for k in self.ignored if _PROPERTY_NAME.fullmatch(k))
        others = len(self.ignored) - len(names)
        shown = names + ((f"<{others} line(s) that are no property name>",) if others else ())
        return (f"ClientConfig(source={self.source!r}, options={self.redacted()!r}, "
                f"ignored={shown!r})")

    __str__ = __repr__


_PROPERTY_NAME = re.compile(r"[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*")
_JAAS = re.compile(r"""\s*(\S+)\s+(required|requisite|sufficient|optional)\s*(.*?);?\s*$""", re.S)
_JAAS_OPTION = re.compile(
    r"""\s*([\w.]+)\s*=\s*("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^\s;]+)""", re.S)


def _parse_jaas(jaas: str, source: str) -> tuple[str, dict[str, str]]:
    """(login module, options) of a sasl.jaas.config line.

    Errors never echo the line: it holds a password.
    """
    m = _JAAS.match(jaas)
    if not m:
        raise ConfigError("sasl.jaas.config is not '<LoginModule> required key=\"value\" ...;'",
                          source=source)
    module, rest, options = m.group(1), m.group(3), {}
    pos = 0
    while pos < len(rest.strip()):
        om = _JAAS_OPTION.match(rest, pos)
        if not om:
            raise ConfigError("sasl.jaas.config has an option that is not key=value "
                              "(value not shown)", source=source)
        value = om.group(2)
        if value[:1] in "\"'":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[om.group(1)] = value
        pos = om.end()
    return module, options


def _pem_or_refuse(key: str, path: str, store_type: str | None, source: str, hidden: bool) -> str:
    kind = (store_type or "").upper()
    if kind == "PEM" or (not kind and path.lower().endswith((".pem", ".crt", ".cer", ".key"))):
        return path
    if hidden:
        raise ConfigError(f"{key} is not a PEM file, and {_CONTINUED}", source=source)
    # kafka-python (Python's ssl module) reads PEM only.
    stem = Path(path).stem
    raise ConfigError(
        f"{key} is a {kind or 'JKS/PKCS12'} store ({path}); kafka-python needs PEM files. "
        f"Convert it:\n"
        f"  keytool -importkeystore -srckeystore {path} -destkeystore {stem}.p12 "
        f"-deststoretype PKCS12\n"
        f"  openssl pkcs12 -in {stem}.p12 -nokeys -out {stem}.pem          # certificates\n"
        f"  openssl pkcs12 -in {stem}.p12 -nocerts -nodes -out {stem}-key.pem   "
        f"# private key (keystores)\n"
        f"then set {key}={stem}.pem and {key.rsplit('.', 1)[0]}.type=PEM", source=source)


# A value joined from continued lines may hold the next line, a password perhaps: errors never
# echo one.
_CONTINUED = ("its value runs on over the next line(s) after a trailing backslash "
              "(not shown: it may hold a secret from those lines); "
              "end the line without a backslash, or write it as \\\\")

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

    if not _PEM_BLOCK.search(text):
        return text
    return "\n".join(rewrap(m) for m in _PEM_BLOCK.finditer(text)) + "\n"


def _private_file(content: str, temp_files: list[str]) -> str:
    """A 0600 temporary file holding `content` (a private key, perhaps), removed at exit."""
    fd, path = tempfile.mkstemp(prefix="zk2kafka-", suffix=".pem")  # mkstemp creates it 0600
    # A private key must not outlive the run (forked workers leave by os._exit and skip this).
    # Registered before writing: a failed write leaves nothing behind either.
    atexit.register(Path(path).unlink, missing_ok=True)
    with os.fdopen(fd, "w") as f:
        f.write(_pem_lines(content))
    temp_files.append(path)
    return path


def check_tls(options: Mapping[str, object], source: str) -> None:
    """Load the PEM files as kafka-python will: a wrong path or key password is a ConfigError now.

    Later, kafka-python would retry the same failure until its bootstrap timeout, and with an
    encrypted key and no password OpenSSL would prompt for a pass phrase on the terminal.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cafile := options.get("ssl_cafile"):
        try:
            context.load_verify_locations(cafile)
        except (OSError, ssl.SSLError) as e:
            why = getattr(e, "strerror", None) or e.reason or "no PEM certificate in it"
            raise ConfigError(f"cannot load the CA certificates of ssl.truststore.* from {cafile}: "
                              f"{why}", source=source) from None
    if certfile := options.get("ssl_certfile"):
        keyfile = options["ssl_keyfile"]
        if not os.access(str(certfile), os.R_OK) or not os.access(str(keyfile), os.R_OK):
            raise ConfigError(f"cannot read the ssl.keystore.* files {certfile}, {keyfile}",
                              source=source)
        password = options.get("ssl_password")
        try:
            # A callable, never None: None lets OpenSSL ask for the pass phrase on the terminal.
            context.load_cert_chain(certfile, keyfile, password=lambda: str(password or ""))
        except ssl.SSLError:
            given = "is wrong" if password else "is not set and the key is encrypted"
            raise ConfigError(f"cannot load the client key and certificate of ssl.keystore.*: "
                              f"ssl.key.password {given}, "
                              f"or the PEM does not hold a private key and its certificate",
                              source=source) from None


def load_client_config(path: str | os.PathLike) -> ClientConfig:
    """Read a --command-config file and map it onto kafka-python options; raises ConfigError."""
    source = str(path)
    try:
        props, continued = _parse(Path(path).read_text(encoding="utf-8"), source)
    except OSError as e:
        raise ConfigError(f"cannot read the client properties file: {e.strerror}",
                          source=source) from None
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

    def shown(key: str) -> str:
        """The value of `key` for an error message, unless it ran on over other lines."""
        return _CONTINUED if key in continued else f"got {props[key]!r}"

    if (protocol := take("security.protocol")) is not None:
        if protocol.upper() not in _PROTOCOLS:
            raise ConfigError(f"security.protocol must be one of {', '.join(_PROTOCOLS)}; "
                              f"{shown('security.protocol')}", source=source)
        options["security_protocol"] = protocol.upper()
    mechanism = take("sasl.mechanism")
    if mechanism is not None:
        if mechanism.upper() not in _MECHANISMS:
            raise ConfigError(f"sasl.mechanism must be one of {', '.join(_MECHANISMS)}; "
                              f"{shown('sasl.mechanism')}", source=source)
        options["sasl_mechanism"] = mechanism = mechanism.upper()
    if (jaas := take("sasl.jaas.config")) is not None:
        module, jaas_options = _parse_jaas(jaas, source)
        if module.endswith("PlainLoginModule"):
            options.setdefault("sasl_mechanism", "PLAIN")
        elif module.endswith("ScramLoginModule") and mechanism is None:
            raise ConfigError("a SCRAM login module needs sasl.mechanism=SCRAM-SHA-256 "
                              "or SCRAM-SHA-512", source=source)
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
            digits = value.strip()
            # ASCII digits only, as Java
            if not re.fullmatch(r"[0-9]{1,19}", digits) or int(digits) > _LONG_MAX:
                raise ConfigError(f"{key} must be a whole number of milliseconds up to "
                                  f"{_LONG_MAX}; {shown(key)}", source=source)
            options[option] = int(digits)
    if (servers := take("bootstrap.servers")) is not None:
        options["bootstrap_servers"] = [s.strip() for s in servers.split(",") if s.strip()]

    # TLS: PEM files, or PEM text inline (written to private temporary files).
    if (trust := take("ssl.truststore.location")) is not None:
        options["ssl_cafile"] = _pem_or_refuse("ssl.truststore.location", trust,
                                               take("ssl.truststore.type"), source,
                                               "ssl.truststore.location" in continued)
        take("ssl.truststore.password")  # PEM trust stores have none; Java-only
    if (store := take("ssl.keystore.location")) is not None:
        pem = _pem_or_refuse("ssl.keystore.location", store, take("ssl.keystore.type"), source,
                             "ssl.keystore.location" in continued)
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
        raise ConfigError("SSL settings given but security.protocol is not SSL or SASL_SSL",
                          source=source)

    ignored = tuple(sorted(k for k in props if k not in used))
    hidden = frozenset(o for o, keys in _TEXT_ORIGINS.items()
                       if o in options and continued.intersection(keys))
    return ClientConfig(options, ignored, source, tuple(temp_files), hidden)
