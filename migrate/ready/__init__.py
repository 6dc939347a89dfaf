"""Checking that nothing kept in ZooKeeper is left behind when the cluster leaves it (KIP-866),
read-only in both stores.

- `check`: `zk2kafka ready-for-kraft`: reads ZooKeeper, watches it for writes, reads it again,
  snapshots Kafka, judges and leaves the evidence in the state dir;
- `watch`: the watch that finds a writer by its writes alone (one that never registers);
- `rules`: the verdict per group, pure; `coverage`: what the verdict covers beyond the groups it
  judged (groups a selection left out, trees elsewhere, `--leave-behind`), pure;
- `evidence`: what it reads of `__consumer_offsets` and of the clocks, while the watch waits;
- `expiry`: when Kafka deletes the offsets of the groups it holds with no member, pure;
- `own`: which differences zk2kafka made itself, from the journal.
"""
