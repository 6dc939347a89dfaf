"""ZooKeeper: reading every offset, and the conditional znode writer the dual commit uses.

- reading: `scan`, `reader`, `walk`, `layouts`, `parse`; `multiread`: many reads in one round trip
  (ZooKeeper 3.6+); `client`: a started kazoo session from the connection options;
- the ZooKeeper side of a command, chosen once (`side`): a live ensemble, a copy of a server's
  data directory (`datadir`, with the ACLs its znodes carried, `acls`) or a snapshot zk2kafka
  wrote; `ensemble`: the search of the whole ensemble for other offsets trees;
- `quiet`: whether a group's offsets are still, the rule `sync` and `ready-for-kraft` share;
  `brokers`: the brokers' registrations, a measure of their clocks against ZooKeeper's;
  `clock`: the clock probe, an ephemeral znode measuring ZooKeeper's leader's clock both ways;
- `writer`: the conditional znode writer; `_compat`: kazoo's private names.
"""
