"""Applying a plan (the third stage), with one module per role.

- `runs`: a journaled `migrate --execute` (new, `--plan`, `--resume`), `rollback`, `verify --run`
  and `status`; `guards`: what must hold before a run may resume, roll back or be verified.
- `dual_commit`: a batch of groups written to Kafka, then ZooKeeper, each checked and read back;
  `kafka_half` and `zk_half`: each store's checks, writes, read-backs and put-backs;
  `batches`: the batches in flight and a clean stop on Ctrl-C; `sessions`: the stores' sessions
  a writing command opens; `shards`: `--writers N`, the write phase over N processes.
- `journal`: the run journal (SQLite) a resume starts from; `locks`: the one-writer lock.
- `follow`, `sync`, `watch`, `authorship`, `readiness`: follow mode for a rolling cutover;
  `metrics` and `service`: its Prometheus series and its /metrics and /healthz endpoint.

The stores' own writers are `migrate/kafka/writer.py` and `migrate/zk/writer.py`; the plan comes
from `migrate/diff/`.
"""
