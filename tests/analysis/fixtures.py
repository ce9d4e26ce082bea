"""Data built once for a module or a class of tests, inside a transaction
rolled back when they end (the pattern of tests/test_openapi_schemathesis.py's
api_data_once): each test's own transaction (pytest-django's `db`) is a
savepoint within it, so every test still starts from the same rows, and no
row outlives the tests that share them.

Only for tests that run in this process's connection: a test that needs
committed data (transactional_db, live_server, a browser, a Celery worker,
threads) cannot see rows of a transaction that never commits."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction


@contextmanager
def rolled_back_once(django_db_blocker) -> Iterator[None]:
    """Open the database and a transaction for the data a scope's tests share;
    roll it back when they are done."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)
