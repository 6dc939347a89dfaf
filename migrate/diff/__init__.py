"""Planning (the second stage): the ZooKeeper and Kafka snapshots joined on Spark into a plan,
with no I/O to either store. `offset_diff`: the Spark query; `run`: the Spark session; `plan` and
`schema`: the plan's columns, identity and streaming; `summary`: the counts and facts a report and
a change ticket quote. `migrate/pipeline.py` composes the stages up to a plan.
"""
