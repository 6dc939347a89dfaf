"""Kafka: what zk2kafka reads of it and writes to it.

- `offsets_log/`: the one reader of `__consumer_offsets` (its own front door says the route);
- `wire/`: zk2kafka's own codecs of the requests it sends (Fetch, OffsetFetch, OffsetCommit,
  ConsumerGroupDescribe);
- `snapshot`: the committed offsets, groups and log bounds a plan is made against;
- `writer`: the OffsetCommit writer the dual commit, sync and renew use; `renamed`: it, for a
  group written under another name;
- `takeover`: the rule that says when Kafka's value of a partition is a new consumer's, pure;
  `clocks`: how far the brokers' and ZooKeeper's clocks are from zk2kafka's, measured;
- `members`: who is live in a group and what they hold; `log_bounds`: a partition's first and
  last offsets; `offset_syncs`: MirrorMaker 2's offset syncs;
- `client`: the one place clients are opened, and the batched read of committed offsets;
  `compat`: what each broker release can answer; `_compat`: kafka-python's private names;
  `retry`: the retry policy; `values`: the small values all of these speak in.
"""
