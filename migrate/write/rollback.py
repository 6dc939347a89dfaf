"""`rollback RUN`: the values a run journaled before it wrote, put back in Kafka and ZooKeeper,
group by group (with --execute; without, what would be restored). It is a journaled run of its
own (kind rollback): an interrupted rollback goes on where it stopped."""

from __future__ import annotations

from typing import Any

from migrate import stores
from migrate.journal.journal import DONE, INCOMPLETE, RUNNING, VERIFIED, Journal
from migrate.progress import Progress
from migrate.settings import Settings
from migrate.state import new_run_id
from migrate.write import guards, results
from migrate.write.batches import run_batches
from migrate.write.dual_commit import DualCommit
from migrate.write.renamed import of_run
from migrate.write.sessions import open_writers


def rollback(settings: Settings, run_id: str) -> dict[str, Any]:
    """Put back the values a run journaled before it wrote, in Kafka and ZooKeeper (with --execute);
    without it, what would be restored."""
    writer = f"rollback --execute {run_id}" if settings.execute else None   # a dry run only reads
    with Journal.open(settings.state_dir, writer=writer) as journal:
        original = guards.journaled(journal, run_id, ("migrate", "sync"))
        wrote_zk = not original.settings.get("no_zk_write")
        touched = [g.name for g in journal.groups(run_id) if g.before_recorded]
        offsets = sum(map(len, journal.partitions_of(run_id, touched).values()))
        if not settings.execute:
            return {"run": run_id, "groups": len(touched), "offsets": offsets, "dry_run": True,
                    "wrote_zookeeper": wrote_zk}
        reached = stores.reach(settings.connection, zookeeper=wrote_zk)
        guards.same_stores(original, reached, settings.connection, settings.recorded(),
                           "roll back")
        previous = guards.not_rolled_back(journal, run_id)
        # Both stores are reachable before anything is journaled.
        with open_writers(settings.connection, settings.parallelism, zk=wrote_zk,
                          renamed=of_run(original.settings)) as writers:
            if previous is not None:
                rollback_id = previous.run_id  # an interrupted rollback goes on
            else:
                rollback_id = new_run_id()
                journal.create_run(rollback_id, "rollback", original.plan_hash, original.settings,
                                   {g: [] for g in touched}, rolls_back=run_id,
                                   report=original.report)
            todo = [g.name for g in journal.groups(rollback_id) if g.state != VERIFIED]
            journal.set_run(rollback_id, RUNNING)
            # The run's own semantics: they decide which znode bytes are the ones it wrote.
            writer = DualCommit(journal, rollback_id, writers.kafka, writers.zk, "",
                                original.settings["offset_semantics"])
            with Progress("groups rolled back", total=len(todo)) as progress:
                batched = run_batches(todo, lambda gs: [writer.rollback(g, run_id) for g in gs],
                                      1, settings.parallelism, progress)
        run = journal.run(rollback_id)
        done = not batched.interrupted and run.groups[VERIFIED] == len(touched)
        journal.set_run(rollback_id, DONE if done else INCOMPLETE)
        return results.of_rollback(journal.run(rollback_id), batched)
