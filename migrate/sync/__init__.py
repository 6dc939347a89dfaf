"""The follower service, the `sync` command: follow mode for a rolling cutover, each ZooKeeper
offset change mirrored into Kafka until stopped, one module per role.

- `command`: the sync command: the followers in the service shell it shares with `renew`
  (migrate/service_shell.py: the journal, signals, the stop timer and the metrics endpoint);
- `follower`: the `Follower`, which reads, watches and mirrors the selected groups; `decide`:
  what a pass commits against what Kafka holds, or why a group is left alone; `state`: what it
  knows of each group, the re-scan under way and the run's figures; `watch`: its ZooKeeper
  watches; `readiness`: when a group is ready to switch; `outage`: what it logs of a ZooKeeper
  outage; `renames`: sync through a group mapping;
- `sessions`: one follower's sessions and the follower in the command's process
  (`FollowOptions`); `follower_shards`: `sync --writers N`, the groups over N follower
  processes;
- `metrics` and `service`: its Prometheus series, and its /metrics and /healthz endpoint;
  `expiry_clock`: the retention clock as its series.

The journal, and who wrote an offset Kafka holds (`authorship`), are migrate/journal/; worker
processes are started by `migrate/processes.py`. Nothing here imports the one-shot writer
(migrate/write/).
"""
