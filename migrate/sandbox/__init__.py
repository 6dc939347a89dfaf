"""A real local ZooKeeper + Kafka for the demo and the tests, of any release migrate/jvm/ runs, and
the stand-ins for an operator's world the runbooks' sandbox-only lines run; the `zk2kafka sandbox`
commands (`commands`). Nothing of the product imports it but the command layer.

- `cluster`: ZooKeeper, ZooKeeper-mode broker(s) and a KRaft Kafka 4, started and stopped; `modes`:
  what a home holds (its release, ZooKeeper, a KIP-866 phase or KRaft); `kraft_migration`: Kafka's
  own migration to KRaft in place (KIP-866); `mirrormaker`: MirrorMaker 2 between two sandboxes;
- `security` and `tls`: who may log in (a ZooKeeper super user, SCRAM and TLS listeners) and the
  TLS material; `tools`: Kafka's own command-line tools of the sandbox's release;
- `seed`: topics, messages and legacy ZooKeeper offsets, odd cases included;
- the stand-ins for an operator's world: `old_consumers` (stopping them), `new_consumer` (a
  group's new consumer on Kafka-kept offsets), `v0_client` (a legacy OffsetCommit v0 client)."""

# The least `v0-client start --every` takes: it paces a legacy client's commits to the broker.
V0_EVERY_FLOOR = 0.1
V0_EVERY_FLOOR_WHY = ("each commit is a request to the broker and a ZooKeeper write: more often "
                      "than ten times a second it only loads the sandbox")
