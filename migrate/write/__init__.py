"""The one-shot writer: `migrate --execute` (a fresh plan, a reviewed `--plan`, `--resume`),
`rollback`, `verify --run` and `status`, one module per role.

- `execute`: a fresh plan's run (`fresh`) or a reviewed one's (`reviewed`), top to bottom: the
  plan, its checks (`guards`), the journal, the write phase (`phase`), the run's data and exit
  code (`results`); `resume`: a run goes on; `rollback`; `status`; `applied`: what a run wrote,
  read back (`verify --run`, a plan applied again); `review`: what a reviewed plan saw, checked
  again; `scratch`: the throwaway journals of dry runs; `snapshot_plan`: what a run of a plan
  read from a snapshot writes, and checks ZooKeeper against; `renamed`: the Kafka side of a run
  through a group mapping.
- `dual_commit`: a batch of groups written to Kafka, then ZooKeeper, each checked and read back;
  `kafka_half` and `zk_half`: each store's checks, writes, read-backs and put-backs; `put_back`:
  a failed group put back in both stores; `batches`: the batches in flight and a clean stop on
  Ctrl-C; `sessions`: the stores' sessions a writing command opens (`WriterOptions`);
  `writer_shards`: `migrate --writers N`, the write phase over N processes.

The journal and its lock are migrate/journal/; the stores' own writers `migrate/kafka/writer.py`
and `migrate/zk/writer.py`; the plan comes from `migrate/diff/`; worker processes are started by
`migrate/processes.py`. Nothing here imports the follower service (migrate/sync/).
"""
