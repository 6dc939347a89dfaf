"""Applying a plan: the batched dual commit with its resume and rollback (dual_commit), follow mode for a
rolling cutover (sync), and the run journal with the writers' lock (journal). The stores' own writers are
migrate/kafka/writer.py and migrate/zk/writer.py; the plan comes from migrate/diff/plan.py."""
