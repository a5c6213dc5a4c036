"""The leveret_node fixture that installing Leveret gives any project's pytest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_users_test_gets_a_real_node(tmp_path: Path) -> None:
    (tmp_path / "test_uses_leveret.py").write_text(
        "import pika\n"
        "\n"
        "def test_round_trip(leveret_node):\n"
        "    with pika.BlockingConnection(pika.URLParameters(leveret_node.url)) as conn:\n"
        "        channel = conn.channel()\n"
        "        channel.queue_declare('greetings')\n"
        "        channel.basic_publish('', 'greetings', b'hello')\n"
        "        assert channel.basic_get('greetings', auto_ack=True)[2] == b'hello'\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
