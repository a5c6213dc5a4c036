"""A node in a container takes its memory limit (cgroup v2 or v1) as the memory it has."""

from __future__ import annotations

from pathlib import Path

from leveret.memory import total_memory


def test_a_container_limit_below_the_machine_is_the_total(tmp_path: Path) -> None:
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    machine = total_memory(())
    v2.write_text("536870912\n")
    assert total_memory((v2, v1)) == 512 * 1024**2
    v2.write_text("max\n")  # no limit in cgroup v2: the machine's memory
    assert total_memory((v2, v1)) == machine
    v1.write_text(f"{2**63 - 4096}\n")  # cgroup v1's "no limit" is a huge number
    assert total_memory((tmp_path / "absent", v1)) == machine
    v1.write_text("1073741824\n")
    assert total_memory((tmp_path / "absent", v1)) == 1024**3
