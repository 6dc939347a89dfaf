"""The run journal both writing programs share: `migrate --execute` (migrate/write/) and
`sync --execute` (migrate/sync/) journal their runs here, and `status`, `rollback`,
`verify --run` and `ready-for-kraft` read it.

- `journal`: <state-dir>/journal.sqlite: each run, its groups' states and every offset's values
  before and after it wrote them (what resume starts from and rollback restores);
- `runs`: a run as the journal holds it, and the digest of the settings it ran with;
- `values`: a journaled offset (Partition), and a group's values kept as one JSON value per group
  (a batch's step is a statement per group), read with the plan's rows of the offsets;
- `locks`: the one-writer lock on <state-dir>/journal.lock, and one transaction at a time
  between a command's threads;
- `authorship`: who wrote an offset Kafka holds, zk2kafka (a run the journal holds) or someone
  else, for sync and ready-for-kraft.
"""
