"""Database work that outlasts a blip: a restart, a failover, a session the
server ended (`pg_terminate_backend`).

A thread whose connection broke gets an error on its next query and, left
alone, on every query after it (Django reconnects only when the connection
is closed). `outlasting_outages` closes the broken connection and runs the
work again on a new one, waiting longer each time (0.1 s doubling to 2 s),
until the database answers or CONCORD_DATABASE_OUTAGE_SECONDS have passed
(then the error is raised, as before). Any other error (a lock timeout, a
serialization failure, a constraint) is the work's own: it is raised at
once.

The work must be safe to run again from its start: one transaction, or reads.
Inside a transaction nothing is tried again here (the connection cannot be
closed in the middle of one): the error reaches whoever opened it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_PAUSE = 0.1
LONGEST_PAUSE = 2.0


def outage_seconds() -> float:
    return float(getattr(settings, "CONCORD_DATABASE_OUTAGE_SECONDS", 300))


# PostgreSQL's codes for a connection that went away: class 08 (connection
# exception) and the server shutting down or starting up
OUTAGE_STATES = ("08", "57P01", "57P02", "57P03")


def is_outage(error: Exception) -> bool:
    """Whether the error says the database could not be reached (not that the
    work itself was refused). A psycopg error without a code is the client's
    own word for a lost or refused connection. Elsewhere (SQLite): when this
    thread's connection no longer answers."""
    if isinstance(error, InterfaceError):
        return True
    cause = error.__cause__
    if connection.vendor == "postgresql" and cause is not None and hasattr(cause, "sqlstate"):
        state = cause.sqlstate
        return state is None or state.startswith(OUTAGE_STATES)
    return connection_broken()


def connection_broken() -> bool:
    """Whether this thread's connection is gone (closed, or not answering)."""
    if connection.connection is None:
        return True
    try:
        return not connection.is_usable()
    except Exception:
        return True


def outlasting_outages(
    function: Callable[..., T],
    *args: Any,
    what: str = "database work",
    stop: threading.Event | None = None,
    **kwargs: Any,
) -> T:
    """`function(*args, **kwargs)`, run again on a new connection while the
    database cannot be reached (see the module's docstring). `stop` set: the
    next error is raised at once (the caller gave up)."""
    if connection.in_atomic_block:
        return function(*args, **kwargs)
    deadline = time.monotonic() + outage_seconds()
    pause = FIRST_PAUSE
    failures = 0
    while True:
        try:
            result = function(*args, **kwargs)
        except (OperationalError, InterfaceError) as error:
            if not is_outage(error):
                raise
            failures += 1
            if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                raise
            log = logger.warning if failures == 1 else logger.debug
            log("%s: the database did not answer (%s); trying again", what, error)
            connection.close()
            if stop is not None:
                stop.wait(pause)
            else:
                time.sleep(pause)
            pause = min(2 * pause, LONGEST_PAUSE)
            continue
        if failures:
            logger.warning("%s: the database answers again after %d failures", what, failures)
        return result
