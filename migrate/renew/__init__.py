"""`renew`: keep alive, after ZooKeeper is gone, the offsets zk2kafka wrote into Kafka.

From the journal and Kafka alone: the values migrate and sync runs committed (written.py), each
re-committed exactly as Kafka holds it where Kafka still holds that value and the group has no
member (renewer.py), the run journaled and locked as every writer's (command.py).
"""
