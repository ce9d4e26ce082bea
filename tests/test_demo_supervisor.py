"""The demo's supervisor: every stop signal, however the demo was started,
stops every child and exits 0; a child that stops by itself is a crash."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from tests.processes import session_processes


def start(mode: str, *, grace_seconds: float = 20, ignored=()) -> subprocess.Popen:
    """The stand-in demo in a session of its own, with these signals ignored as
    a shell leaves them to a program it starts in the background or under nohup."""

    def inherit_ignored():
        for number in (signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN if number in ignored else signal.SIG_DFL)

    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.supervised", mode, str(grace_seconds)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=inherit_ignored,
    )
    assert process.stdout.readline() == "ready\n"
    return process


def wait_for_children(process: subprocess.Popen, count: int) -> None:
    deadline = time.monotonic() + 20
    while len(session_processes(process.pid)) < count + 1:
        assert time.monotonic() < deadline, "the children did not start"
        time.sleep(0.05)


def finish(process: subprocess.Popen, seconds: float = 30) -> tuple[int, str]:
    try:
        output, _ = process.communicate(timeout=seconds)
    finally:
        for pid in session_processes(process.pid):  # what a failed test left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return process.returncode, output


@pytest.mark.parametrize(
    ("signal_name", "to_group", "ignored"),
    [
        ("SIGINT", True, ()),  # Ctrl-C in a terminal: the foreground process group
        ("SIGINT", True, (signal.SIGINT,)),  # the same, started with `&` by a script
        ("SIGTERM", False, ()),  # kill PID
        ("SIGHUP", False, ()),  # the terminal closed
    ],
    ids=["ctrl-c", "ctrl-c-started-in-background", "kill", "hang-up"],
)
def test_a_stop_signal_stops_every_child_and_exits_0(signal_name, to_group, ignored):
    process = start("sleepers", ignored=ignored)
    wait_for_children(process, 2)
    number = getattr(signal, signal_name)
    if to_group:
        os.killpg(process.pid, number)
    else:
        process.send_signal(number)
    code, output = finish(process)
    assert (code, output) == (0, "stopping\n")
    assert session_processes(process.pid) == []


def test_nohup_keeps_the_demo_running_when_the_terminal_closes():
    process = start("sleepers", ignored=(signal.SIGHUP,))
    wait_for_children(process, 2)
    process.send_signal(signal.SIGHUP)
    time.sleep(1)
    assert process.poll() is None and len(session_processes(process.pid)) == 3
    process.terminate()
    assert finish(process) == (0, "stopping\n")


def test_a_child_that_stops_by_itself_is_a_crash_and_the_others_are_stopped():
    process = start("crash")
    code, output = finish(process)
    assert code == 1
    assert output == "stopping\ncrashed: crash exit code 3\n"
    assert session_processes(process.pid) == []  # the sleeper was stopped


def test_a_child_deaf_to_sigterm_is_killed_with_its_own_children_after_the_grace():
    process = start("stubborn", grace_seconds=1)
    wait_for_children(process, 3)  # sleeper, stubborn and the stubborn one's child
    started = time.monotonic()
    process.terminate()
    assert finish(process) == (0, "stopping\n")
    assert 1 <= time.monotonic() - started < 15
    assert session_processes(process.pid) == []


def test_a_second_stop_signal_does_not_wait_for_the_grace():
    process = start("stubborn", grace_seconds=120)
    wait_for_children(process, 3)
    process.terminate()
    assert process.stdout.readline() == "stopping\n"
    time.sleep(0.5)
    assert process.poll() is None  # waiting for the stubborn child
    started = time.monotonic()
    process.terminate()
    assert finish(process, seconds=15) == (0, "")
    assert time.monotonic() - started < 10
    assert session_processes(process.pid) == []
