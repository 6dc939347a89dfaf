"""zk2kafka: move Kafka consumer-group offsets from ZooKeeper into Kafka, safely."""

__version__ = "0.1.0"
