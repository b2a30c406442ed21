"""Ids: random from the OS, read in blocks, never shared by a forked child."""

from __future__ import annotations

import os
import re

import pytest

from reference_server.pipeline.ids import new_id


def test_ids_are_prefixed_hex_and_unique_across_several_blocks() -> None:
    ids = [new_id("resp") for _ in range(1_000)]  # 16 bytes each: ~4 reads of 4 KiB
    assert all(re.fullmatch(r"resp_[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_the_parents_buffered_bytes() -> None:
    new_id("resp")  # the parent now holds a partly used block
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.write(write_end, new_id("resp").encode())
        os._exit(0)
    os.close(write_end)
    child_id = os.read(read_end, 64).decode()
    os.waitpid(pid, 0)
    os.close(read_end)
    assert child_id.startswith("resp_") and child_id != new_id("resp")
