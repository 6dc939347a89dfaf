"""Not collected by the suite (no test_ prefix): run by test_no_leftovers.py as a pytest process to be killed."""

import os
import time
from pathlib import Path


def test_hold_the_cluster(cluster):
    Path(os.environ["ZK2KAFKA_VICTIM_READY"]).write_text(cluster.bootstrap_server)
    time.sleep(600)
