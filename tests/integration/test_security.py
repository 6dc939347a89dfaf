"""zk2kafka against a secured cluster, as an operator would point it there.

Kafka over SASL_PLAINTEXT with SCRAM and over SSL with a client certificate whose key is
encrypted (the sandbox's `security=True` listeners), its ACLs enforced; ZooKeeper offsets behind
digest ACLs, the credential coming from the environment or a TOML file. Wrong passwords are one
clear line, and no secret reaches stdout, stderr or any file a run leaves behind. A topic the
SCRAM principal may not Describe is never taken for gone: it blocks the diff, `migrate` and the
gate, naming the permission to grant.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka.admin import (ACL, ACLOperation, ACLPermissionType, KafkaAdminClient, ResourcePattern,
                         ResourceType)
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from migrate.kafka.snapshot import not_authorized
from migrate.sandbox.cluster import LocalCluster
from migrate.sandbox.security import SCRAM_USER, SUPER_USER
from migrate.sandbox.tls import TLS_KEY_PASSWORD

from support.cli import Run, zk2kafka
from support.seeding import kafka_offsets, make_topic
from support.servers import CACHE_DIR
from support.wait import wait_for

TOPIC, PARTITIONS = "orders", 3
# Quotes and a backslash: the password must be hidden in every spelling (repr, JSON) too.
ZK_USER = ("zk2kafka-digest", f'zk-pw-{uuid.uuid4().hex[:12]}-"q\\')
SECRETS = {"SCRAM password": SCRAM_USER[1], "ZooKeeper digest password": ZK_USER[1],
           "TLS key password": TLS_KEY_PASSWORD}
GROUPS = {"scram": ["scram-g0", "scram-g1"], "ssl": ["ssl-g0"]}


def expected(group: str, partition: int) -> int:
    return 3 + 5 * sorted(g for gs in GROUPS.values() for g in gs).index(group) + partition




@dataclass
class Secured:
    cluster: object
    zookeeper: str  # connect string with this module's chroot
    home: Path  # where the command-config files and state dirs go


@pytest.fixture(scope="module")
def secured(tmp_path_factory) -> Secured:
    """A sandbox with SCRAM and SSL listeners; legacy offsets readable only with ZK_USER's digest."""
    # ACLs enforced, as a secured cluster enforces them: a resource without any is open to all (so the flows
    # below need none), the PLAINTEXT listener's principal (setup, the brokers themselves) is a super user.
    cluster = LocalCluster(tmp_path_factory.mktemp("secured"), CACHE_DIR, security=True, broker_properties={
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true", "super.users": "User:ANONYMOUS"})
    endpoints = cluster.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=endpoints.bootstrap_server)  # setup only: PLAINTEXT
        make_topic(admin, endpoints.bootstrap_server, TOPIC, PARTITIONS, 20)
        admin.close()
        chroot = f"/secured-{uuid.uuid4().hex[:8]}"
        root = KazooClient(hosts=endpoints.zk_server, auth_data=[("digest", ":".join(SUPER_USER))])
        root.start(timeout=15)
        root.ensure_path(chroot)
        root.stop()
        root.close()
        # Every znode from /consumers down is the digest user's alone: without its password nothing can be listed.
        owner = KazooClient(hosts=endpoints.zk_server + chroot, auth_data=[("digest", ":".join(ZK_USER))],
                            default_acl=[make_digest_acl(*ZK_USER, all=True)])
        owner.start(timeout=15)
        for group in (g for gs in GROUPS.values() for g in gs):
            for p in range(PARTITIONS):
                # Partition 0's value ends in a newline, so the dual commit rewrites it through the ACL as digits;
                # the others hold the run's bytes already and are fenced by reading.
                owner.create(f"/consumers/{group}/offsets/{TOPIC}/{p}",
                             str(expected(group, p)).encode() + (b"\n" if p == 0 else b""), makepath=True)
        owner.stop()
        owner.close()
        yield Secured(endpoints, endpoints.zk_server + chroot, tmp_path_factory.mktemp("operator"))
    finally:
        cluster.stop()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def scram_properties(home: Path, mechanism: str = "SCRAM-SHA-256", password: str = SCRAM_USER[1],
                     name: str = "scram.properties", extra: str = "") -> Path:
    return write(home / name, (
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="{SCRAM_USER[0]}" password="{password}";\n' + extra))


def ssl_properties(secured: Secured, key_password: str = TLS_KEY_PASSWORD, name: str = "ssl.properties") -> Path:
    endpoints = secured.cluster
    return write(secured.home / name, (
        "security.protocol=SSL\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={endpoints.ssl_cafile}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={endpoints.ssl_client_pem}\n"
        f"ssl.key.password={key_password}\n"))


def inline_ssl_properties(secured: Secured) -> Path:
    """The same credentials inline, continued over lines with backslashes as Kafka's documentation writes them."""
    def inline(pem: str) -> str:
        return " \\\n    ".join(pem.strip().splitlines())

    endpoints = secured.cluster
    client = Path(endpoints.ssl_client_pem).read_text()
    key_end = client.index("-----END ENCRYPTED PRIVATE KEY-----") + len("-----END ENCRYPTED PRIVATE KEY-----")
    return write(secured.home / "ssl-inline.properties", (
        "security.protocol=SSL\nssl.truststore.type=PEM\nssl.keystore.type=PEM\n"
        f"ssl.truststore.certificates={inline(Path(endpoints.ssl_cafile).read_text())}\n"
        f"ssl.keystore.key={inline(client[:key_end])}\n"
        f"ssl.keystore.certificate.chain={inline(client[key_end:])}\n"
        f"ssl.key.password={TLS_KEY_PASSWORD}\n"))


def zk_auth_toml(secured: Secured, password: str = ZK_USER[1]) -> Path:
    return write(secured.home / "zk2kafka.toml", f"zk-auth = 'digest:{ZK_USER[0]}:{password}'\n")


def migrate_flow(bootstrap: str, props: Path, zookeeper: list[str], state: Path, group: str,
                 verify_props: Path | None = None, env: dict[str, str] | None = None) -> dict[str, Run]:
    """scan, diff, migrate --execute and verify, as a runbook runs them."""
    local = [*zookeeper, "--state-dir", str(state), "--group", group, "--json"]

    def kafka(properties: Path) -> list[str]:
        return [*local, "--bootstrap-server", bootstrap, "--command-config", str(properties)]

    return {"scan": zk2kafka("scan", *local, env=env),
            "diff": zk2kafka("diff", *kafka(props), env=env),
            "migrate": zk2kafka("migrate", *kafka(props), "--execute", "-v", env=env),
            "verify": zk2kafka("verify", *kafka(verify_props or props), env=env)}


@pytest.fixture(scope="module")
def flows(secured: Secured) -> dict[str, tuple[dict[str, Run], Path]]:
    """The SCRAM flow (ZooKeeper credential from ZK2KAFKA_ZK_AUTH) and the SSL flow (from a TOML file)."""
    endpoints, home = secured.cluster, secured.home
    scram = migrate_flow(
        endpoints.sasl_bootstrap_server, scram_properties(home), ["--zookeeper", secured.zookeeper],
        home / "state-scram", "scram-.*",
        # The broker offers both mechanisms: verify logs in with the other one.
        verify_props=scram_properties(home, "SCRAM-SHA-512", name="scram-512.properties"),
        env={"ZK2KAFKA_ZK_AUTH": f"digest:{':'.join(ZK_USER)}"})
    ssl = migrate_flow(
        endpoints.ssl_bootstrap_server, ssl_properties(secured),
        ["--zookeeper", secured.zookeeper, "--config", str(zk_auth_toml(secured))], home / "state-ssl", "ssl-.*",
        verify_props=inline_ssl_properties(secured))
    return {"scram": (scram, home / "state-scram"), "ssl": (ssl, home / "state-ssl")}


@pytest.mark.parametrize("flow", ["scram", "ssl"])
def test_scan_diff_migrate_verify_over_a_secured_kafka_and_acl_protected_zookeeper(secured, flows, flow):
    runs, _ = flows[flow]
    for name, run in runs.items():
        assert run.code == 0, (name, run.err[-2000:])
    groups = GROUPS[flow]
    offsets = len(groups) * PARTITIONS
    assert runs["scan"].data["counts"] == {"OK": offsets}
    assert runs["diff"].data["counts"]["MIGRATE"] == offsets and runs["diff"].data["blockers"] == 0
    assert runs["migrate"].data["written"] == offsets and runs["migrate"].data["state"] == "done"
    assert runs["verify"].data["verified"]

    admin = KafkaAdminClient(bootstrap_servers=secured.cluster.bootstrap_server)
    try:
        in_kafka = kafka_offsets(admin, groups)
    finally:
        admin.close()
    zk = KazooClient(hosts=secured.zookeeper, auth_data=[("digest", ":".join(ZK_USER))])
    zk.start(timeout=15)
    try:
        for group in groups:
            for p in range(PARTITIONS):
                assert in_kafka[group][(TOPIC, p)][0] == expected(group, p)
                value, stat = zk.get(f"/consumers/{group}/offsets/{TOPIC}/{p}")
                # the dual commit went through the ACL, where the bytes change
                assert (value, stat.version) == (str(expected(group, p)).encode(), int(p == 0))
    finally:
        zk.stop()
        zk.close()


@pytest.fixture(scope="module")
def failures(secured: Secured) -> dict[str, tuple[Run, Path]]:
    """Runs with a wrong password each, plus the chattiest successful run (-vv, JSON logs, --debug)."""
    endpoints, home = secured.cluster, secured.home
    state = home / "state-failures"
    zk = ["--zookeeper", secured.zookeeper, "--state-dir", str(state), "--group", "scram-.*"]
    kafka = ["--bootstrap-server", endpoints.sasl_bootstrap_server]
    wrong_scram = scram_properties(home, password="not-" + SCRAM_USER[1], name="wrong-scram.properties",
                                   extra="default.api.timeout.ms=4000\n")  # give up bootstrapping soon
    right_zk = f"digest:{':'.join(ZK_USER)}"
    return {
        "no ZooKeeper credentials": (zk2kafka("scan", *zk), state),
        "wrong ZooKeeper password": (zk2kafka("scan", *zk, "--zk-auth", f"digest:{ZK_USER[0]}:wrong-{ZK_USER[1]}"),
                                     state),
        "wrong ZooKeeper password, -vv --debug, JSON logs": (zk2kafka(
            "scan", *zk, "--config", str(zk_auth_toml(secured, f"wrong-{ZK_USER[1]}")), "-vv", "--debug",
            "--log-format", "json"), state),
        "scan -vv, JSON logs": (zk2kafka("scan", *zk, "--zk-auth", right_zk, "-vv", "--log-format", "json"), state),
        "wrong SCRAM password": (zk2kafka("diff", *zk, *kafka, "--command-config", str(wrong_scram),
                                          "--zk-auth", right_zk), state),
        "wrong SCRAM password, -vv --debug": (zk2kafka(
            "migrate", *zk, *kafka, "--command-config", str(wrong_scram), "--execute", "-vv", "--debug",
            env={"ZK2KAFKA_ZK_AUTH": right_zk}), state),
        "no client certificate": (zk2kafka(
            "sync", *zk, "--bootstrap-server", endpoints.ssl_bootstrap_server, "--zk-auth", right_zk,
            "--command-config", str(write(home / "no-certificate.properties", (
                f"security.protocol=SSL\nssl.truststore.location={endpoints.ssl_cafile}\n"
                "default.api.timeout.ms=3000\n")))), state),
        "wrong TLS key password": (zk2kafka(
            "diff", *zk, "--bootstrap-server", endpoints.ssl_bootstrap_server, "--zk-auth", right_zk,
            "--command-config", str(ssl_properties(secured, "wrong-" + TLS_KEY_PASSWORD, "wrong-ssl.properties")),
            "--debug"), state),
    }


@pytest.mark.parametrize("case, code, message", [
    ("no ZooKeeper credentials", 1, "cannot list /consumers: NoAuthError; pass --zk-auth"),
    ("wrong ZooKeeper password", 1,
     "cannot list /consumers: NoAuthError; the credentials given (--zk-auth) may not read it: wrong password or user?"),
    # Either the broker's answer or, when kafka-python lost it, the disconnect that follows it.
    ("wrong SCRAM password", 2, re.compile(
        rf"refused the SCRAM-SHA-256 login of user '{SCRAM_USER[0]}': Authentication failed during authentication "
        r"due to invalid credentials with SASL mechanism SCRAM-SHA-256 \(check sasl.jaas.config\)"
        rf"|closed the connection while user '{SCRAM_USER[0]}' logged in with SCRAM-SHA-256: a wrong password "
        r"in sasl.jaas.config")),
    ("no client certificate", 1, "Unable to bootstrap from ['127.0.0.1:"),
    ("wrong TLS key password", 2, "cannot load the client key and certificate of ssl.keystore.*: "
                                  "ssl.key.password is wrong"),
])


def test_a_wrong_password_is_one_clear_line(failures, case, code, message):
    run, _ = failures[case]
    assert run.code == code, run.err[-2000:]
    errors = [line for line in run.err.splitlines() if line.startswith("zk2kafka: error:")]
    assert len(errors) == 1, run.err[-2000:]
    assert (message.search(errors[0]) if isinstance(message, re.Pattern) else message in errors[0]), errors[0]
    if "--debug" not in run.argv:
        assert "Traceback" not in run.err


def spellings(secret: str) -> set[bytes]:
    """The secret as bytes, as it looks inside a repr of a str or of bytes, and each of those inside JSON."""
    found = set()
    for form in (secret, repr(secret)[1:-1], repr(secret.encode())[2:-1]):
        found |= {form.encode(), json.dumps(form)[1:-1].encode(), json.dumps(form, ensure_ascii=False)[1:-1].encode()}
    return found


def test_no_secret_in_any_output_or_file(flows, failures):
    searched: dict[str, bytes] = {}
    state_dirs = {state for _, state in flows.values()} | {state for _, state in failures.values()}
    for state in state_dirs:
        for path in state.rglob("*"):
            if path.is_file():
                searched[str(path)] = path.read_bytes()  # the journal's SQLite pages and Parquet too
    runs = [run for flow, _ in flows.values() for run in flow.values()] + [run for run, _ in failures.values()]
    for i, run in enumerate(runs):
        searched[f"stdout of {' '.join(run.argv[:1])} #{i}"] = run.out.encode()
        searched[f"stderr of {' '.join(run.argv[:1])} #{i}"] = run.err.encode()
    assert any(p.endswith("journal.sqlite") for p in searched) and any(p.endswith(".html") for p in searched)
    assert any(p.endswith(".parquet") for p in searched) and any(p.endswith("rows.csv") for p in searched)
    # The chatty runs did log what kazoo and kafka-python send: the password was there to hide.
    chatty = failures["scan -vv, JSON logs"][0].err + failures["wrong SCRAM password, -vv --debug"][0].err
    assert "Auth(auth_type=0, scheme='digest'" in chatty and "Starting KafkaAdminClient with configuration" in chatty

    leaks = [f"{what} in {where}" for what, secret in SECRETS.items() for where, content in searched.items()
             if any(form in content for form in spellings(secret))]
    assert not leaks, leaks


HIDDEN, HIDDEN_GROUP = "payroll", "scram-hidden"


def test_a_topic_zk2kafka_may_not_describe_blocks_and_is_never_taken_for_gone(secured):
    endpoints, home = secured.cluster, secured.home
    admin = KafkaAdminClient(bootstrap_servers=endpoints.bootstrap_server)   # PLAINTEXT: the super user
    try:
        make_topic(admin, endpoints.bootstrap_server, HIDDEN, 1, 20)
        admin.create_acls([ACL(f"User:{SCRAM_USER.user}", "*", ACLOperation.DESCRIBE, ACLPermissionType.DENY,
                               ResourcePattern(ResourceType.TOPIC, HIDDEN))])
    finally:
        admin.close()
    owner = KazooClient(hosts=secured.zookeeper, auth_data=[("digest", ":".join(ZK_USER))],
                        default_acl=[make_digest_acl(*ZK_USER, all=True)])
    owner.start(timeout=15)
    owner.create(f"/consumers/{HIDDEN_GROUP}/offsets/{HIDDEN}/0", b"7", makepath=True)
    owner.stop()
    owner.close()
    scram = scram_properties(home, name="scram-hidden.properties")
    ask = ["--zookeeper", secured.zookeeper, "--bootstrap-server", endpoints.sasl_bootstrap_server,
           "--command-config", str(scram), "--group", HIDDEN_GROUP, "--json"]
    env = {"ZK2KAFKA_ZK_AUTH": f"digest:{':'.join(ZK_USER)}"}
    # The ACL is the brokers' once they have read it from ZooKeeper: the SCRAM user's metadata says so.
    scram_admin = KafkaAdminClient(bootstrap_servers=endpoints.sasl_bootstrap_server,
                                   security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                                   sasl_plain_username=SCRAM_USER.user, sasl_plain_password=SCRAM_USER.password)
    try:
        wait_for("the DENY to be in force", lambda: scram_admin.describe_topics([HIDDEN])[0]["error_code"] == 29, 30)
    finally:
        scram_admin.close()

    diff = zk2kafka("diff", *ask, "--state-dir", str(home / "state-hidden"), env=env)
    assert diff.code == 3 and diff.data["blockers"] == 1, diff.err[-2000:]
    assert {k: n for k, n in diff.data["counts"].items() if n} == {"TOPIC_NOT_AUTHORIZED": 1}, diff.data["counts"]
    rows = pq.read_table(Path(diff.data["files"]["plan"])).to_pylist()
    assert [r["status"] for r in rows] == ["TOPIC_NOT_AUTHORIZED"]
    assert f"zk2kafka may not describe topic {HIDDEN}" in rows[0]["reason"] and \
        f"--operation Describe --operation Read --topic {HIDDEN}" in rows[0]["reason"], rows[0]["reason"]

    migrated = zk2kafka("migrate", *ask, "--state-dir", str(home / "state-hidden"), "--execute", env=env)
    assert migrated.code == 3, (migrated.code, migrated.err[-2000:])
    admin = KafkaAdminClient(bootstrap_servers=endpoints.bootstrap_server)
    try:
        assert kafka_offsets(admin, [HIDDEN_GROUP]) == {HIDDEN_GROUP: {}}, "an offset not shown was written"
    finally:
        admin.close()

    gate = zk2kafka("ready-for-kraft", *ask, "--state-dir", str(home / "state-hidden-gate"), "--quiet-for", "1s",
                    env=env)
    assert gate.code == 3 and not gate.data["ready"], gate.err[-2000:]
    (verdict,) = [v for v in gate.data["verdicts"] if v["group"] == HIDDEN_GROUP]
    assert not verdict["topic_gone"], verdict
    assert verdict["unreadable"] == [f"{HIDDEN}-0: TOPIC_NOT_AUTHORIZED: " + not_authorized(HIDDEN)], verdict
