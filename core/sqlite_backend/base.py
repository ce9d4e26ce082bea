"""Django's SQLite backend, with one change: `flush` sets triggers aside.

Some tables refuse every DELETE with a trigger (annotator's human data; see
docs/human-studies.md). PostgreSQL empties tables with TRUNCATE, which row
triggers do not see; SQLite has no TRUNCATE and empties them with DELETE FROM,
which the triggers refuse. Emptying the whole database (`manage.py flush`,
and pytest-django between transactional tests) is the one deletion these
tables allow: the flush drops the database's triggers, deletes, and creates
them again as they were, in the flush's own transaction, so a failed flush
leaves them in place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db.backends.sqlite3 import base, operations

if TYPE_CHECKING:
    from django.core.management.color import Style  # a class in the stubs only


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(
        self,
        style: Style,
        tables: Sequence[str],
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        sql = super().sql_flush(
            style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
        if not sql:
            return sql
        # Every trigger of the database, not only those of `tables`: with
        # allow_cascade the parent empties more tables than it was given.
        triggers = self.triggers()
        drops = [f"DROP TRIGGER {self.quote_name(name)};" for name, _ in triggers]
        creates = [f"{definition};" for _, definition in triggers]
        return drops + sql + creates

    def triggers(self) -> list[tuple[str, str]]:
        """(name, CREATE statement) of every trigger in the database."""
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
            )
            return list(cursor.fetchall())


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
