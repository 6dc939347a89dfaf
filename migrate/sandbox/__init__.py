"""A real local ZooKeeper + Kafka for the demo and the tests, from pinned Maven Central jars
(`artifacts`), of any release in `releases`; the `zk2kafka sandbox` commands (`commands`)."""
