"""Kafka: the committed offsets and log bounds a plan is made against (`snapshot`), the offset
writer the dual commit uses (`writer`), what each broker release can answer (`compat`) and the
time an Empty group has left (`group_clock`). `_compat`: kafka-python's private names."""
