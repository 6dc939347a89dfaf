"""Who may log in to the sandbox: its ZooKeeper super user, and the broker's secured listeners.

With `security=True` the ZooKeeper-mode broker also listens on SASL_PLAINTEXT (SCRAM-SHA-256 and
-512, user SCRAM_USER) and on SSL (client certificates required; the material comes from `tls`).
Every credential here is for the sandbox only.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from migrate.errors import SandboxError
from migrate.jvm.server import JavaServer, free_port, kafka_ready, wait_for_server
from migrate.sandbox.tls import TLS_KEY_PASSWORD, make_tls


class Credentials(NamedTuple):
    user: str
    password: str


# A ZooKeeper super user, so tests and `sandbox down` can clean up nodes behind any ACL.
SUPER_USER = Credentials("zk2kafka-super", "sandbox-only-super-password")
# The secured listeners' credentials (security=True).
SCRAM_USER = Credentials("zk2kafka-scram", "sandbox-only-scram-password")
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def super_digest() -> str:
    """The `user:hash` form ZooKeeper's superDigest property takes, for SUPER_USER."""
    from kazoo.security import make_digest_acl_credential

    return make_digest_acl_credential(*SUPER_USER)


class SecuredListeners(NamedTuple):
    """The broker properties of the secured listeners, and where they listen."""

    properties: dict
    endpoints: dict[str, str]  # the secured fields of cluster.Endpoints


def secured_listeners(home: Path, plaintext: str) -> SecuredListeners:
    """A SASL_PLAINTEXT (SCRAM) and an SSL listener beside `plaintext`, on free ports.

    The TLS material goes to `<home>/tls`.
    """
    tls = make_tls(home / "tls")
    sasl, ssl = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    endpoints = {"sasl_bootstrap_server": sasl, "ssl_bootstrap_server": ssl,
                 "ssl_cafile": str(tls["ca"]), "ssl_client_pem": str(tls["client"])}
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    return SecuredListeners({
        "listeners": f"{plaintext},SASL_PLAINTEXT://{sasl},SSL://{ssl}",
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": ",".join(SCRAM_MECHANISMS),
        **{f"listener.name.sasl_plaintext.{m.lower()}.sasl.jaas.config": scram
           for m in SCRAM_MECHANISMS},
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": tls["broker"],
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": tls["ca"],
        "listener.name.ssl.ssl.client.auth": "required",
    }, endpoints)


def open_secured_listeners(broker: JavaServer, bootstrap: str, endpoints: dict[str, str],
                           timeout: float) -> None:
    """Create SCRAM_USER (over PLAINTEXT at `bootstrap`), then wait until it logs in and the SSL
    listener answers; raises SandboxError."""
    from kafka.admin import KafkaAdminClient, UserScramCredentialUpsertion

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="zk2kafka-sandbox")
    try:
        errors = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(SCRAM_USER.user, m, SCRAM_USER.password)
             for m in SCRAM_MECHANISMS])
    finally:
        admin.close()
    if any(errors.values()):
        raise SandboxError(f"creating the SCRAM user failed: {errors}")
    # In ZooKeeper mode the broker learns of the user through a ZooKeeper watch: log in until
    # it has.
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": SCRAM_MECHANISMS[0],
            "sasl_plain_username": SCRAM_USER.user,
            "sasl_plain_password": SCRAM_USER.password}
    wait_for_server("Kafka SASL_PLAINTEXT listener", broker,
                    lambda: kafka_ready(endpoints["sasl_bootstrap_server"], **sasl), timeout)
    pem = endpoints["ssl_client_pem"]
    ssl = {"security_protocol": "SSL", "ssl_cafile": endpoints["ssl_cafile"],
           "ssl_certfile": pem, "ssl_keyfile": pem, "ssl_password": TLS_KEY_PASSWORD}
    wait_for_server("Kafka SSL listener", broker,
                    lambda: kafka_ready(endpoints["ssl_bootstrap_server"], **ssl), timeout)
