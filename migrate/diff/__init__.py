"""Planning (the second stage): the ZooKeeper and Kafka snapshots joined on Spark into a plan,
with no I/O to either store. `offset_diff` and `judge`: the Spark query and each row's status;
`translate`: ZooKeeper's offsets mapped through MirrorMaker 2's offset syncs; `rename`: each
ZooKeeper group judged against the Kafka group a mapping names; `run`: the Spark
session, whose driver maps the class-data archive of `cds` (made by `cds_dump`); `plan` and
`schema`: the plan's columns, identity and streaming; `coverage`: the partitions no offset
covers; `summary`: the counts and facts a report and a change ticket quote, with `retention`, the
retention preflight. `migrate/pipeline.py` composes the stages up to a plan.
"""
