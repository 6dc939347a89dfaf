"""zk2kafka's own codecs of the Kafka requests it sends on kafka-python's connections, where
kafka-python's generic protocol objects cost too much or do not exist.

- `primitives`: the compiled structs, one reader, one writer, the varint both ways;
- `request`: the request base every codec below subclasses (header, flexible versions, the
  version range, how the connection reads the answer);
- `fetch`: Fetch, the raw records of `__consumer_offsets`;
- `offset_commit`: OffsetCommit, every commit zk2kafka makes;
- `offset_fetch`: OffsetFetch, every read of committed offsets;
- `consumer_groups`: ConsumerGroupDescribe (KIP-848) and the classic ConsumerProtocol assignment.

Nothing here imports `offsets_log/`: the wire is below the reader.
"""
