"""Run the demo's processes (web server, worker) until asked to stop, then stop them all.

Each child runs in a process group of its own, so a Ctrl-C (SIGINT to the
terminal's foreground group), a `kill` (SIGTERM) or a closed terminal
(SIGHUP) reaches this process alone, and this process stops the children.
Were they in its group, a Ctrl-C would reach them too: they would stop on
their own while this process looks at them, and a child found stopped could
not be told from a crash. So: a child that stops while no stop was asked for
has crashed.

SIGINT and SIGTERM are caught whatever this process inherited: a shell
that starts a program in the background (`make demo &` in a script) makes it
ignore SIGINT, and the demo must still stop cleanly on one, as it says it
does. SIGHUP stays ignored when it was (`nohup make demo`). Pure standard
library, no Django.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import TypeAlias

# What signal.signal takes and gives back: a function, SIG_DFL or SIG_IGN, or
# None (a handler not installed from Python).
SignalHandler: TypeAlias = Callable[[int, FrameType | None], object] | int | signal.Handlers | None
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Child:
    name: str
    process: subprocess.Popen

    @property
    def exit_code(self) -> int | None:
        return self.process.poll()


class Supervisor:
    """Use as a context manager: on leaving it, every child has stopped."""

    def __init__(self, *, grace_seconds: float = 30, poll_seconds: float = 0.2) -> None:
        self.children: list[Child] = []
        self.grace_seconds = grace_seconds
        self.poll_seconds = poll_seconds
        self.stop_signals: list[int] = []  # the stop signals received, in order
        self._previous_handlers: dict[int, SignalHandler] = {}

    def __enter__(self) -> Supervisor:
        for number in STOP_SIGNALS:
            if number == signal.SIGHUP and signal.getsignal(number) == signal.SIG_IGN:
                continue
            self._previous_handlers[number] = signal.signal(number, self._stop_requested)
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self.stop_all()
        finally:
            for number, handler in self._previous_handlers.items():
                signal.signal(number, handler)

    def _stop_requested(self, signum: int, frame: FrameType | None) -> None:
        # only a note: the main loop acts on it, so that no exception can
        # interrupt a wait or the stopping of the children half-way
        self.stop_signals.append(signum)

    @property
    def stop_requested(self) -> bool:
        return bool(self.stop_signals)

    def start(self, name: str, command: list[str], **popen_options) -> Child:
        process = subprocess.Popen(command, process_group=0, **popen_options)
        child = Child(name, process)
        self.children.append(child)
        return child

    def stopped_child(self) -> Child | None:
        """The first child that is no longer running."""
        return next((c for c in self.children if c.exit_code is not None), None)

    def crashed_child(self) -> Child | None:
        """A child that stopped while no stop was asked for."""
        return None if self.stop_requested else self.stopped_child()

    def wait(self, seconds: float | None = None, until=None) -> None:
        """Until a stop is asked for, a child stops, `until()` holds or `seconds` pass."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while not self.stop_requested and self.stopped_child() is None:
            if until is not None and until():
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(self.poll_seconds)

    def stop_all(self) -> None:
        """SIGTERM to every child still running (the worker's warm shutdown, the
        web server's exit), then, after the grace period or at a further stop
        signal, SIGKILL to the process group of any that has not stopped."""
        signals_before = len(self.stop_signals)
        for child in self.children:
            child.process.send_signal(signal.SIGTERM)  # nothing when it has stopped
        deadline = time.monotonic() + self.grace_seconds
        while any(c.exit_code is None for c in self.children):
            if time.monotonic() >= deadline or len(self.stop_signals) > signals_before:
                break
            time.sleep(self.poll_seconds)
        for child in self.children:
            if child.exit_code is None:
                # its whole group: a killed worker would leave its pool behind (the
                # group's id cannot be reused while its leader is not reaped)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.process.pid, signal.SIGKILL)
            child.process.wait()
