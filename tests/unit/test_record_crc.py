"""kafka-python checks the CRC-32C of every record batch it reads: the reads of `__consumer_offsets` for
the commit times (sync's retention clock, ready-for-kraft, the Kafka snapshot) check some 100,000 records
a read. zk2kafka installs kafka-python's `crc32c` extra so that the check runs in C: without it
kafka-python falls back, silently, to its CRC-32C in Python, half the time of such a read
(docs/performance.md, Sync)."""

import crc32c
from kafka.record import util


def test_kafka_python_checks_record_batches_with_the_c_crc32c():
    assert util._crc32c is crc32c.crc32c, "kafka-python computes CRC-32C in Python: is `crc32c` installed?"
    assert util.calc_crc32c(memoryview(b"123456789")) == 0xE3069283   # CRC-32C's check value
