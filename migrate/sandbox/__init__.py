"""A real local ZooKeeper + Kafka for the demo and the tests, of any release migrate/jvm/ runs, and
the stand-ins for an operator's world the runbooks' sandbox-only lines run; the `zk2kafka sandbox`
commands (`commands`). Nothing of the product imports it but the command layer."""

# The least `v0-client start --every` takes: it paces a legacy client's commits to the broker.
V0_EVERY_FLOOR = 0.1
V0_EVERY_FLOOR_WHY = ("each commit is a request to the broker and a ZooKeeper write: more often "
                      "than ten times a second it only loads the sandbox")
