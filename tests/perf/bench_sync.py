"""Benchmark: `zk2kafka sync --execute` under a steady stream of ZooKeeper offset changes: the mirror
latency of each change (p50, p99, max) and the memory of sync over the run.

    python tests/perf/bench_sync.py                           # 10,000 groups x 10 partitions, 1,000 changes/s, 60 min
    python tests/perf/bench_sync.py --minutes 2 --json sync.json
    python tests/perf/bench_sync.py --groups 2000 --rate 200 1000 --minutes 1   # one stream per rate
    python tests/perf/bench_sync.py --writers 2 --rate 1000 --minutes 1         # sync over 2 processes
    python tests/perf/bench_sync.py --pin 0:1 --rate 1000 3000 --minutes 1      # sync alone on core 1

Starts its own sandbox (ZooKeeper with a 1 GB heap, a ZooKeeper-mode Kafka 3.9 broker with 2 GB) unless
--zookeeper and --bootstrap-server are given. Seeds the groups in ZooKeeper (group i reads the
`--partitions` partitions of topic i mod `--topics`), starts sync as a child process, as an operator
would, and times the first full mirror (until its `zk2kafka_sync_offsets_mirrored_total` series counts
every offset). Then old consumers' commits arrive at `--rate` a second for `--minutes` (one stream
after the other for several rates, on the same sync): each moves one random partition's znode
forward (pipelined `set`s, paced every 10 ms).

The latency of a change is from the moment its `set` was sent to ZooKeeper to the timestamp the group
coordinator gave the commit sync made of that value (or a later one: sync commits the latest value it
reads, so a change overtaken by the next one on the same partition is mirrored by that one's
commit), read from `__consumer_offsets` itself: nothing polls Kafka's groups, which would load the
broker being measured. A change not mirrored within `--drain` seconds of the end counts as missed,
and fails the run. A sampler reads sync's resident memory (its processes' Pss) every second; the table gives it
at the stream's start, at its peak and at its end, and the slope over the stream (MiB a minute).

What sync costs: the CPU time (user + system, from /proc) of its whole process tree from the stream's
start until Kafka held every change of it, per change sent. On a machine of few cores that figure is
sync's own only when nothing else runs on its cores: `--pin STORES:CLIENT` puts ZooKeeper, the broker
and this benchmark's writer and reader on the cores of STORES and sync on those of CLIENT ("0:1" on 2
cores). The drain time is from the stream's end until Kafka held its last change.

Sync runs with its defaults, as an operator's would: per-group series on `/metrics` and the default
log level (stderr goes to a file). The flags the benchmark adds are the connection, the selection, the
state dir, `--rescan-every`, `--writers` and `--metrics-address`; `--sync-flags` adds more (e.g.
`--sync-flags="--no-group-metrics -q"`), and the table names them. A scraper reads the whole
`/metrics` every `--scrape-every` seconds during the streams, as Prometheus would (0: none), in the
Prometheus text format (Prometheus itself asks for OpenMetrics first, which costs sync more:
docs/performance.md).

Prints a Markdown table; exits 1 when a change was missed or sync failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from bench_migrate import Layout, Pinning, make_topics, seed_zookeeper, stores
from bench_scale import MIB, Sampler, _tree
from kafka import KafkaConsumer, TopicPartition
from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from migrate.jvm.server import free_port
from migrate.zk.client import PollingHandler

ROOT = Path(__file__).resolve().parents[2]

OFFSETS_TOPIC = "__consumer_offsets"
TICK = 0.01   # seconds between two bursts of changes
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PASSES = ("zk2kafka_sync_commits_total", "zk2kafka_sync_watch_rearm_duration_seconds_count")


def scrape(address: str) -> dict[str, float]:
    """Unlabelled samples of sync's /metrics, by name (only `names` asked: the per-group series of
    10,000 groups are 70,000 lines); {} while it does not answer."""
    query = "&".join(f"name[]={n}" for n in ("zk2kafka_sync_offsets_mirrored_total", *PASSES))
    try:
        with urllib.request.urlopen(f"http://{address}/metrics?{query}", timeout=10) as answer:
            text = answer.read().decode()
    except OSError:
        return {}
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples if not s.labels}


def expiry_reads(address: str) -> float:
    """Reads of the retention clocks sync finished (`zk2kafka_sync_expiry_reads_total{result="ok"}`);
    scraping starts its retention clock, as Prometheus's first scrape does."""
    try:   # the whole page (the retention clock's series are read at scrape time: no name[] filter)
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as answer:
            text = answer.read().decode()
    except OSError:
        return 0.0
    wanted = 'zk2kafka_sync_expiry_reads_total{result="ok"} '
    return sum(float(line[len(wanted):]) for line in text.splitlines() if line.startswith(wanted))


def fill_offsets_topic(bootstrap: str, run: str, records: int) -> dict:
    """About `records` commit records of other groups in __consumer_offsets: repeated commits of 10,000
    groups x 100 partitions, from outside, as bench_offsets_log.py makes them; what was made."""
    from bench_offsets_log import commit_rounds, make_topic

    topic, rounds = f"{run}other-orders", max(1, round(records / 1_000_000))
    make_topic(bootstrap, topic, 100)
    seconds = commit_rounds(bootstrap, topic, f"{run}other-g", 10_000, 100, rounds, 32, 1000)
    _say(f"__consumer_offsets: {rounds * 1_000_000:,} records of other groups committed in {seconds:.0f}s")
    return {"records": rounds * 1_000_000, "seconds": round(seconds, 1)}


def decode(key: bytes | None, value: bytes | None) -> tuple[tuple[str, str, int], int] | None:
    """((group, topic, partition), offset) of an offset commit record of __consumer_offsets; None for
    the other records (group metadata, tombstones)."""
    if key is None or value is None or len(key) < 2:
        return None
    version = struct.unpack_from(">h", key)[0]
    if version not in (0, 1):
        return None
    at = 2
    fields = []
    for _ in range(2):
        (n,) = struct.unpack_from(">h", key, at)
        fields.append(key[at + 2:at + 2 + n].decode())
        at += 2 + n
    (partition,) = struct.unpack_from(">i", key, at)
    (offset,) = struct.unpack_from(">q", value, 2)   # after the value's int16 version, in every version
    return (fields[0], fields[1], partition), offset


class Scraper(threading.Thread):
    """Reads sync's whole /metrics (text format) every `every` seconds, as Prometheus would; the
    text is only counted (Prometheus parses it on its own host)."""

    def __init__(self, address: str, every: float):
        super().__init__(daemon=True)
        self.address, self.every = address, every
        self.halt = threading.Event()
        self.scrapes = self.size = 0

    def run(self) -> None:
        while self.every > 0 and not self.halt.wait(self.every):
            try:
                with urllib.request.urlopen(f"http://{self.address}/metrics", timeout=30) as answer:
                    self.size = len(answer.read())
                self.scrapes += 1
            except OSError:
                continue


class Commits(threading.Thread):
    """Reads __consumer_offsets from its end: the first time Kafka held each (key, offset or more)."""

    def __init__(self, bootstrap: str, prefix: str):
        super().__init__(daemon=True)
        self.prefix = prefix
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                      fetch_max_wait_ms=10, client_id="zk2kafka-bench-sync")
        parts = self.consumer.partitions_for_topic(OFFSETS_TOPIC) or set()
        self.consumer.assign([TopicPartition(OFFSETS_TOPIC, p) for p in parts])
        self.consumer.seek_to_end()
        for tp in self.consumer.assignment():
            self.consumer.position(tp)   # resolve the end now, before any change is sent
        self.lock = threading.Lock()
        self.seen: dict[tuple[str, str, int], list[tuple[int, float]]] = {}   # key -> [(offset, time)]
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            for records in self.consumer.poll(timeout_ms=100).values():
                for r in records:
                    decoded = decode(r.key, r.value)
                    if decoded is None or not decoded[0][0].startswith(self.prefix):
                        continue
                    key, offset = decoded
                    with self.lock:
                        self.seen.setdefault(key, []).append((offset, r.timestamp / 1000))
        self.consumer.close()

    def mirrored_at(self, key, offset: int) -> float | None:
        with self.lock:
            return next((t for o, t in self.seen.get(key, ()) if o >= offset), None)


class Changes(threading.Thread):
    """Old consumers' commits: `rate` a second, each one random partition's znode moved forward."""

    def __init__(self, zookeeper: str, layout: Layout, prefix: str, groups: int, rate: float, seconds: float,
                 rng: random.Random, current: dict):
        super().__init__(daemon=True)
        self.zk = KazooClient(hosts=zookeeper, timeout=30, handler=PollingHandler())   # as sync's: less CPU
        self.zk.start(timeout=30)
        self.layout, self.prefix, self.groups = layout, prefix, groups
        self.rate, self.seconds, self.rng = rate, seconds, rng
        self.current: dict[tuple[str, str, int], int] = current   # across streams: offsets only grow
        self.sent: list[tuple[tuple[str, str, int], int, float]] = []   # (key, offset, time sent)
        self.failed = 0

    def run(self) -> None:
        start = time.monotonic()
        pending = []
        while (now := time.monotonic()) - start < self.seconds:
            # Paced by the clock, not by the ticks: a late tick sends what it owes.
            for _ in range(int(self.rate * (now - start)) - len(self.sent)):
                i = self.rng.randrange(self.groups)
                topic = self.layout.topic(i % self.layout.topics)
                key = (self.layout.group(self.prefix, i), topic, self.rng.randrange(self.layout.partitions))
                offset = self.current.get(key, self.layout.messages) + 1   # past every seeded offset
                self.current[key] = offset
                path = f"/consumers/{key[0]}/offsets/{topic}/{key[2]}"
                self.sent.append((key, offset, time.time()))
                pending.append(self.zk.set_async(path, str(offset).encode()))
            if len(pending) > 2000:
                self._drain(pending[:1000])
                del pending[:1000]
            time.sleep(max(0.0, TICK - (time.monotonic() - now)))
        self._drain(pending)
        self.zk.stop()
        self.zk.close()

    def _drain(self, pending) -> None:
        for answer in pending:
            try:
                answer.get(timeout=60)
            except Exception:  # noqa: BLE001 - a lost write is counted, and its change then counts as missed
                self.failed += 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zookeeper", help="an existing ZooKeeper, with the chroot holding /consumers")
    ap.add_argument("--bootstrap-server", help="an existing Kafka (give --zookeeper too)")
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10, help="offsets per group (partitions of each topic)")
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--messages", type=int, default=5, help="messages per partition")
    ap.add_argument("--rate", type=float, nargs="+", default=[1000.0],
                    help="ZooKeeper offset changes a second; several: one stream after the other")
    ap.add_argument("--minutes", type=float, default=60.0, help="how long each stream of changes lasts")
    ap.add_argument("--rescan-every", default="5m", help="sync --rescan-every")
    ap.add_argument("--writers", type=int, default=1, help="sync --writers: follower processes")
    ap.add_argument("--drain", type=float, default=30.0, help="seconds after the stream for the last changes")
    ap.add_argument("--window", type=float, default=60.0, help="seconds of each window of latencies reported")
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--pin", metavar="STORES:CLIENT",
                    help="cores for the stores and this benchmark, and cores for sync, e.g. 0:1")
    ap.add_argument("--sync-flags", default="",
                    help='more flags for sync, as one shell word, e.g. --sync-flags="--no-group-metrics -q"')
    ap.add_argument("--scrape-every", type=float, default=15.0,
                    help="seconds between two scrapes of sync's whole /metrics during the streams (0: none)")
    ap.add_argument("--offsets-records", type=int, default=0,
                    help="first fill __consumer_offsets with about this many records of other groups' "
                         "repeated commits (10,000 groups x 100 partitions a million; bench_offsets_log.py)")
    ap.add_argument("--offsets-partitions", type=int, default=50,
                    help="the own sandbox's offsets.topic.num.partitions (Kafka's default: 50)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if (args.zookeeper is None) != (args.bootstrap_server is None):
        ap.error("give both --zookeeper and --bootstrap-server, or neither (a sandbox is started)")
    try:
        pin = Pinning(args.pin)
    except ValueError as exc:
        ap.error(str(exc))
    cores = os.sched_getaffinity(0)
    pin.pin_self()   # before any thread or child: the sandbox's JVMs and our threads inherit it

    run = f"sync{uuid.uuid4().hex[:6]}"
    prefix = f"{run}-"
    layout = Layout(run, args.topics, args.partitions, args.messages)
    offsets = args.groups * args.partitions
    work = Path(tempfile.mkdtemp(prefix="zk2kafka-bench-sync-"))
    cluster = sync = None
    figures: dict = {"run": run, "groups": args.groups, "partitions": args.partitions, "offsets": offsets,
                     "rates": args.rate, "minutes": args.minutes, "writers": args.writers,
                     "rescan_every": args.rescan_every, "window": args.window, "cores": os.cpu_count(),
                     "pin": args.pin, "sync_flags": args.sync_flags, "scrape_every": args.scrape_every,
                     "ok": False}
    try:
        cluster, zookeeper, bootstrap = stores(args.zookeeper, args.bootstrap_server, work,
                                               zk_heap="1g", broker_heap="4g",
                                               offsets_partitions=args.offsets_partitions)
        if args.offsets_records:
            figures["offsets_records"] = fill_offsets_topic(bootstrap, run, args.offsets_records)
        make_topics(bootstrap, layout)
        seed_zookeeper(zookeeper, layout, prefix, args.groups)
        _say(f"{offsets:,} offsets ({args.groups:,} groups x {args.partitions} partitions) seeded; "
             f"ZooKeeper {zookeeper}, Kafka {bootstrap}")

        address = f"127.0.0.1:{free_port()}"
        log = work / "sync.log"
        with log.open("w") as err:
            started = time.monotonic()
            sync = subprocess.Popen(
                [sys.executable, "-m", "migrate", "sync", "--execute", "--zookeeper", zookeeper,
                 "--bootstrap-server", bootstrap, "--group", f"{prefix}.*", "--state-dir", str(work / "state"),
                 "--rescan-every", args.rescan_every, "--writers", str(args.writers),
                 "--metrics-address", address, *shlex.split(args.sync_flags)],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, text=True,
                preexec_fn=pin.client_preexec())
        sampler = Sampler(sync.pid, interval=1.0)   # every second: reading Pss costs CPU sync shares
        sampler.start()
        clock = CpuClock(sync.pid)
        clock.start()
        while scrape(address).get("zk2kafka_sync_offsets_mirrored_total", 0) < offsets:
            if sync.poll() is not None:
                raise SystemExit(f"sync exited {sync.returncode} before the first mirror; see {log}")
            time.sleep(0.5)
        figures["first_mirror_s"] = round(time.monotonic() - started, 1)
        figures["first_mirror_peak_mib"] = round(sampler.peak()[0] / MIB)
        _say(f"sync mirrored every offset in {figures['first_mirror_s']}s")
        # The steady state: sync's first read of __consumer_offsets (its retention clock's, from the
        # partitions' start) done before the streams, whose cost is a change's.
        while expiry_reads(address) < 1:
            if sync.poll() is not None:
                raise SystemExit(f"sync exited {sync.returncode} before its first read; see {log}")
            time.sleep(2)
        figures["first_read_s"] = round(time.monotonic() - started, 1)
        figures["first_read_cpu_s"] = round(sum(cpu_seconds(sync.pid).values()), 1)
        _say(f"sync's first read of __consumer_offsets done {figures['first_read_s']}s after its start")
        commits = Commits(bootstrap, prefix)
        commits.start()
        scraper = Scraper(address, args.scrape_every)
        scraper.start()
        rng, current = random.Random(args.seed), {}
        figures["streams"] = []
        for rate in args.rate:
            _say(f"{rate:g} changes/s for {args.minutes:g} min")
            changes = Changes(zookeeper, layout, prefix, args.groups, rate, args.minutes * 60, rng, current)
            figures["streams"].append(stream(changes, commits, sampler, clock, address, args.drain, args.window))
            last = figures["streams"][-1]
            _say(f"  p50 {last['p50_s']} s, p99 {last['p99_s']} s, drained {last['drain_s']} s after, "
                 f"missed {last['missed']}, sync CPU {last['cpu_ms_per_change']} ms a change")
        commits.halt.set()
        commits.join(timeout=10)
        scraper.halt.set()
        figures["scrapes"], figures["scrape_bytes"] = scraper.scrapes, scraper.size
        figures["log"] = str(log)
        figures["ok"] = not any(s["missed"] for s in figures["streams"]) and sync.poll() is None
    finally:
        if sync is not None and sync.poll() is None:
            sync.send_signal(signal.SIGTERM)
            try:
                sync.wait(timeout=60)
            except subprocess.TimeoutExpired:
                sync.kill()
        if cluster:
            cluster.stop()
        os.sched_setaffinity(0, cores)   # a test calling main() gets its cores back
    print(render(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return figures


def stream(changes: Changes, commits: Commits, sampler: Sampler, clock: CpuClock, address: str,
           drain: float, window: float) -> dict:
    """One stream of changes, run; its figures once every change was mirrored or `drain` ran out."""
    start = time.time()
    cpu_before, machine_before, own_before = cpu_seconds(sampler.pid), machine_cpu_seconds(), time.process_time()
    kernel_before = sum(cpu_seconds(sampler.pid, kernel=True).values())
    counted_before = scrape(address)
    changes.start()
    changes.join()
    end = time.time()
    cpu_after, machine_after, own_after = cpu_seconds(sampler.pid), machine_cpu_seconds(), time.process_time()
    kernel_after = sum(cpu_seconds(sampler.pid, kernel=True).values())
    deadline = time.monotonic() + drain
    latencies, missed, last_held = [], [], end
    by_window: dict[int, list[float]] = {}   # latencies by the window their change was sent in
    for key, offset, sent in changes.sent:
        at = commits.mirrored_at(key, offset)
        while at is None and time.monotonic() < deadline:
            time.sleep(0.1)
            at = commits.mirrored_at(key, offset)
        if at is None:
            missed.append((key, offset))
        else:
            last_held = max(last_held, at)
            latencies.append(max(0.0, at - sent))
            by_window.setdefault(int((sent - start) // window), []).append(max(0.0, at - sent))
    # Sync's CPU from the stream's start until Kafka held its last change (read from the samples:
    # this check itself ends later).
    sync_cpu = None if missed else clock.at(last_held) - clock.at(start)
    counted = {name: scrape(address).get(name, 0.0) - counted_before.get(name, 0.0) for name in PASSES}
    rss = [(t, python) for t, python, _ in sampler.samples if start <= t <= end]
    seconds = end - start
    return {"rate": changes.rate, "changes": len(changes.sent), "zk_writes_failed": changes.failed,
            # The machine's load at the stream's end: figures on a shared machine depend on it.
            "load_1m": round(os.getloadavg()[0], 1),
            "missed": len(missed), "achieved_rate": round(len(changes.sent) / max(1e-9, end - start)),
            "p50_s": round(percentile(latencies, 0.50), 3) if latencies else None,
            "p99_s": round(percentile(latencies, 0.99), 3) if latencies else None,
            "max_s": round(max(latencies), 3) if latencies else None,
            "mean_s": round(statistics.fmean(latencies), 3) if latencies else None,
            "drain_s": round(last_held - end, 2) if not missed else None,
            "sync_cpu_s": round(sync_cpu, 1) if sync_cpu is not None else None,
            "cpu_ms_per_change": (round(1000 * sync_cpu / len(changes.sent), 3)
                                  if sync_cpu is not None and changes.sent else None),
            # How sync batched them: OffsetCommits (one per group and pass) and batches of watches
            # armed again (about one per pass), over the stream and its drain.
            "sync_commits": round(counted["zk2kafka_sync_commits_total"]),
            "sync_rearm_batches": round(counted["zk2kafka_sync_watch_rearm_duration_seconds_count"]),
            # in the kernel (system calls: sockets, the journal's writes), over the stream itself
            "sync_system_cpu_pct": round(100 * (kernel_after - kernel_before) / (end - start)),
            "rss_start_mib": round(rss[0][1] / MIB) if rss else None,
            "rss_peak_mib": round(max(r for _, r in rss) / MIB) if rss else None,
            "rss_end_mib": round(rss[-1][1] / MIB) if rss else None,
            "rss_slope_mib_per_min": round(_slope(rss) * 60 / MIB, 2) if len(rss) > 1 else None,
            # Where the tail and the growth are: each window's latencies, each process's memory and
            # CPU (sync's command, its forkserver and its shards; the rest of the machine is this
            # benchmark, ZooKeeper and the broker).
            "windows": [{"from_s": w * window, "changes": len(v), "p50_s": round(percentile(v, 0.50), 3),
                         "p99_s": round(percentile(v, 0.99), 3), "max_s": round(max(v), 3)}
                        for w, v in sorted(by_window.items())],
            "processes": [_process(pid, [(t, r) for t, r in sampler.per_pid.get(pid, []) if start <= t <= end],
                                   (cpu_after.get(pid, 0.0) - used) / seconds)
                          for pid, used in sorted(cpu_before.items())],
            "machine_cpu_pct": round(100 * (machine_after - machine_before) / seconds),
            "benchmark_cpu_pct": round(100 * (own_after - own_before) / seconds),
            "missed_examples": [list(k) + [o] for k, o in missed[:5]]}


def _process(pid: int, rss: list[tuple[float, int]], cpu: float) -> dict:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        command = "?"
    return {"pid": pid, "command": command[-60:], "cpu_pct": round(100 * cpu),
            "rss_start_mib": round(rss[0][1] / MIB) if rss else None,
            "rss_peak_mib": round(max(r for _, r in rss) / MIB) if rss else None,
            "rss_end_mib": round(rss[-1][1] / MIB) if rss else None,
            "rss_slope_mib_per_min": round(_slope(rss) * 60 / MIB, 2) if len(rss) > 1 else None}


class CpuClock(threading.Thread):
    """Samples the CPU time of a process tree every `interval` seconds until it is gone; `at(t)`
    interpolates it."""

    def __init__(self, pid: int, interval: float = 0.25):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, float]] = []   # (time.time(), CPU seconds of the tree)
        self.lock = threading.Lock()

    def run(self) -> None:
        while tree := cpu_seconds(self.pid):   # until sync is gone
            with self.lock:
                self.samples.append((time.time(), sum(tree.values())))
            time.sleep(self.interval)

    def at(self, when: float) -> float:
        with self.lock:
            samples = list(self.samples)
        for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
            if t0 <= when <= t1:
                return c0 + (c1 - c0) * (when - t0) / max(1e-9, t1 - t0)
        return samples[-1][1] if samples and when > samples[-1][0] else (samples[0][1] if samples else 0.0)


def cpu_seconds(root: int, kernel: bool | None = None) -> dict[int, float]:
    """CPU time of `root` and each process below it: user + system, or system only (`kernel`),
    or user only (`kernel` False)."""
    used = {}
    for pid in _tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user, system = int(fields[11]), int(fields[12])
        used[pid] = (system if kernel else user if kernel is False else user + system) / CLOCK_TICKS
    return used


def machine_cpu_seconds() -> float:
    """CPU time the whole machine spent busy (every core, /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / CLOCK_TICKS   # less idle and iowait


def _slope(samples: list[tuple[float, int]]) -> float:
    """Least-squares bytes per second of RSS over the samples."""
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return sum((t - mt) * (r - mr) for t, r in samples) / var if var else 0.0


def render(f: dict) -> str:
    if not f.get("streams"):
        return f"\nsync benchmark {f['run']}: did not get to the stream of changes"
    lines = [
        f"\n{f['offsets']:,} offsets ({f['groups']:,} groups x {f['partitions']} partitions), {f['cores']} cores, "
        f"sync --writers {f['writers']} --rescan-every {f['rescan_every']}"
        + (f" {f['sync_flags']}" if f.get("sync_flags") else " (its defaults otherwise)")
        + (f", /metrics scraped every {f['scrape_every']:g} s ({f.get('scrapes', 0)} scrapes, "
           f"{f.get('scrape_bytes', 0):,} bytes each)" if f.get("scrape_every") else ", /metrics not scraped")
        + (f", pinned {f['pin']} (stores and this benchmark : sync)" if f.get("pin") else ", not pinned")
        + f"; first mirror {f['first_mirror_s']} s (peak RSS {f['first_mirror_peak_mib']} MiB)"
        + (f"; __consumer_offsets filled with {f['offsets_records']['records']:,} records of other groups"
           if f.get("offsets_records") else "")
        + (f"; its first read of __consumer_offsets done {f['first_read_s']} s after its start "
           f"({f['first_read_cpu_s']} s of CPU by then)\n" if f.get("first_read_s") is not None else "\n"),
        "| changes/s asked | achieved | minutes | changes | p50 | p99 | max | drained after | missed |"
        " sync CPU per change | RSS start / peak / end | RSS slope | load (1 min) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s in f["streams"]:
        lines.append(f"| {s['rate']:,.0f} | {s['achieved_rate']:,} | {f['minutes']:g} | {s['changes']:,} | "
                     f"{s['p50_s']} s | {s['p99_s']} s | {s['max_s']} s | {s['drain_s']} s | {s['missed']:,} | "
                     f"{s['cpu_ms_per_change']} ms | {s['rss_start_mib']} / "
                     f"{s['rss_peak_mib']} / {s['rss_end_mib']} MiB | {s['rss_slope_mib_per_min']} MiB/min | "
                     f"{s['load_1m']} |")
    for s in f["streams"]:
        lines.append(f"\n{s['rate']:,.0f} changes/s, p99 by window of {f['window']:g} s: "
                     + " ".join(str(w["p99_s"]) for w in s["windows"]))
        lines.append(f"CPU: machine {s['machine_cpu_pct']}%, this benchmark {s['benchmark_cpu_pct']}%; "
                     f"sync's processes (of which {s['sync_system_cpu_pct']}% in the kernel), "
                     f"{s['sync_commits']:,} OffsetCommits in {s['sync_rearm_batches']:,} batches of watches:")
        for p in s["processes"]:
            lines.append(f"- {p['pid']} `{p['command']}`: CPU {p['cpu_pct']}%, RSS {p['rss_start_mib']} / "
                         f"{p['rss_peak_mib']} / {p['rss_end_mib']} MiB, {p['rss_slope_mib_per_min']} MiB/min")
    return "\n".join(lines)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
