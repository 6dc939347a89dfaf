"""ZooKeeper's multiRead (opcode 22, ZooKeeper >= 3.6): many getData/getChildren in one round
trip.

kazoo 2.11 has no multiRead, so this adds the request type on kazoo's own wire
classes. It is the only place zk2kafka goes below kazoo's public API (its private
names are reached through migrate/zk/_compat.py, checked when imported); the
benchmark in tests/perf/bench_scan.py is why (kazoo spends most of its time per
request, not per byte).
"""

from __future__ import annotations

from collections import namedtuple

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (GetChildren, GetData, MultiHeader, int_struct,
                                          multiheader_struct, read_buffer, read_string,
                                          stat_struct)
from kazoo.protocol.states import ZnodeStat

from migrate.zk import _compat as lib


class MultiRead(namedtuple("MultiRead", "operations")):
    """A batch of GetData / GetChildren, answered by one result (or exception) per operation."""

    type = 22

    def serialize(self) -> bytearray:
        b = bytearray()
        for op in self.operations:
            b.extend(MultiHeader(op.type, False, -1).serialize() + op.serialize())
        return b + multiheader_struct.pack(-1, True, -1)

    @classmethod
    def deserialize(cls, buffer, offset):
        results = []
        header, offset = MultiHeader.deserialize(buffer, offset)
        while not header.done:
            if header.type == GetData.type:
                data, offset = read_buffer(buffer, offset)
                results.append((data, ZnodeStat._make(stat_struct.unpack_from(buffer, offset))))
                offset += stat_struct.size
            elif header.type == GetChildren.type:
                count = int_struct.unpack_from(buffer, offset)[0]
                offset += int_struct.size
                children = []
                for _ in range(max(count, 0)):
                    child, offset = read_string(buffer, offset)
                    children.append(child)
                results.append(children)
            else:  # -1: an error for this operation only
                err = int_struct.unpack_from(buffer, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[err]())
            header, offset = MultiHeader.deserialize(buffer, offset)
        return results


def multi_read_async(client: KazooClient, operations: list[tuple[str, str]]):
    """Send [(op, path)], op "get" or "children", as one multiRead; returns kazoo's async result."""
    request = MultiRead([(GetData if op == "get" else GetChildren)(lib.prefix_root(client, path),
                                                                   None)
                         for op, path in operations])
    result = client.handler.async_result()
    lib.call(client, request, result)
    return result
