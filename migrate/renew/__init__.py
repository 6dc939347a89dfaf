"""`renew`: keep alive, after ZooKeeper is gone, the offsets zk2kafka wrote into Kafka.

From the journal and Kafka alone:
- `written`: the values migrate and sync runs committed, as the journal holds them;
- `renewer`: one pass, each re-committed exactly as Kafka holds it where Kafka still holds that
  value and the group has no member;
- `command`: the passes in the service shell (migrate/service_shell.py), the run journaled and
  locked as every writer's;
- `service`: as a service, its Prometheus series and `/healthz` checks.
"""
