"""Kafka: the committed offsets and log bounds a plan is made against (`snapshot`), the offset
writer the dual commit uses (`writer`), what each broker release can answer (`compat`), the one
reader of `__consumer_offsets` (`offsets_log`, what its records mean in `group_records` and
`group_log`), the takeover rule (`takeover`) and the clocks it weighs (`clocks`). `_compat`:
kafka-python's private names."""
