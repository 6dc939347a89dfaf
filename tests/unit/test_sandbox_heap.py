"""`sandbox up --zookeeper-heap SIZE --broker-heap SIZE`: sizes as the JVM's -Xmx takes them, junk a usage error."""

from __future__ import annotations

import pytest

from migrate.cli import build_parser, main
from migrate.errors import EXIT_USAGE
from migrate.jvm.server import heap_size


@pytest.mark.parametrize("size", ["512m", "4g", "4G", "4096M", "65536k", "1t", "67108864", " 2g "])
def test_a_size_the_jvm_takes_is_kept_as_given(size):
    assert heap_size(size) == size.strip()


@pytest.mark.parametrize("junk", ["", "g", "4x", "4gb", "1.5g", "-1g", "4 g", "0", "63m", "65535k", "٤g", "2e9"])
def test_junk_or_a_heap_below_the_start_size_is_refused(junk):
    with pytest.raises(ValueError, match="heap"):
        heap_size(junk)


def test_the_flags_reach_up_and_default_to_unset():
    parser = build_parser()
    given = vars(parser.parse_args(["sandbox", "up", "--zookeeper-heap", "1g", "--broker-heap", "3g"]))
    assert (given["zookeeper_heap"], given["broker_heap"]) == ("1g", "3g")
    plain = vars(parser.parse_args(["sandbox", "up"]))
    assert plain["zookeeper_heap"] is None and plain["broker_heap"] is None


@pytest.mark.parametrize("flag", ["--zookeeper-heap", "--broker-heap"])
def test_junk_is_one_usage_error_exit_2(flag, capsys):
    assert main(["sandbox", "up", flag, "lots"]) == EXIT_USAGE == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: expected a JVM heap size such as 512m or 4g, got 'lots'" in err
    assert "Traceback" not in err and err.count("error:") == 1
