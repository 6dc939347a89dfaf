"""A real local ZooKeeper + Kafka for the demo and the tests, of any release migrate/jvm/ runs, and
the stand-ins for an operator's world the runbooks' sandbox-only lines run; the `zk2kafka sandbox`
commands (`commands`). Nothing of the product imports it but the command layer."""
