"""The Java servers zk2kafka runs itself: the pinned Maven Central jars (`artifacts`), the Kafka
releases they make up (`releases`), and one server's start, wait and stop (`server`).

Below every stage and the sandbox: `scan --zookeeper-data` replays a copy of a data directory in
a private ZooKeeper started here, and `zk2kafka sandbox` starts its cluster from the same jars.
"""
