"""`zk2kafka sync --execute` as a process of its own, and its Prometheus endpoint scraped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from support.cli import ROOT
from support.wait import wait_for


def get(url: str) -> tuple[int, str]:
    """(HTTP status, body) of a GET, 4xx and 5xx included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def scrape(address: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of /metrics: (sample name, its labels) -> value, parsed by prometheus_client."""
    status, text = get(f"http://{address}/metrics")
    assert status == 200, text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples, name: str, **labels) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def scraped_when(what: str, address: str, check, timeout: float = 30.0):
    """The first scrape for which `check(samples)` holds (the endpoint may not listen yet)."""
    def attempt():
        samples = scrape(address)   # URLError, an OSError, until it listens: wait_for waits on
        return samples if check(samples) else None

    return wait_for(what, attempt, timeout=timeout)


def start_sync(zk_chroot: str, bootstrap: str, prefix: str, state: Path, address: str,
               err, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "migrate", "sync", "--execute", "--zookeeper", zk_chroot,
         "--bootstrap-server", bootstrap, "--group", f"{prefix}.*", "--state-dir", str(state),
         "--rescan-every", "2s", "--stop-after", "300s", "--metrics-address", address,
         "--quiet-for", "1s", *extra],
        stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})


def stop_sync(sync: subprocess.Popen, log: Path) -> str:
    """SIGTERM: sync stops cleanly; what it printed."""
    sync.send_signal(signal.SIGTERM)
    out, _ = sync.communicate(timeout=60)
    assert sync.returncode == 0, log.read_text()[-3000:]
    return out
