"""Looking at the processes a test started: which are still alive, a free port."""

from __future__ import annotations

import os
import socket


def session_processes(session_id: int) -> list[int]:
    """Live processes (zombies excluded) of a session: a process started with
    start_new_session=True and everything it started, whatever their group."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session_id and fields[0] != "Z":
                found.append(int(entry))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
