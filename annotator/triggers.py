"""The database triggers that refuse to delete human data (ratings, assignments,
participants), on PostgreSQL and on SQLite; see docs/human-studies.md.

Migrations call `create_triggers` (0004 first). It is idempotent, and must run
again after any migration that makes SQLite rebuild one of these tables (SQLite
adds most columns by copying the table, and the old table's triggers go with
it): tests/annotator/test_database_guards.py fails when one is missing.
"""

from __future__ import annotations

from django.db.backends.base.schema import BaseDatabaseSchemaEditor

TABLES = ("annotator_rating", "annotator_assignment", "annotator_participant")
FUNCTION = "annotator_refuse_delete"
MESSAGE = "Concord keeps human data: rows of {table} cannot be deleted (docs/human-studies.md)."

POSTGRESQL_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION
        'Concord keeps human data: rows of % cannot be deleted (docs/human-studies.md).',
        TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END
$$
"""


def trigger_name(table: str) -> str:
    return f"{table}_refuse_delete"


def _run(schema_editor: BaseDatabaseSchemaEditor, sql: str) -> None:
    # params=None: the SQL goes as written (PostgreSQL's RAISE uses % itself)
    schema_editor.execute(sql, params=None)


def create_triggers(schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Create each trigger that is missing (or, on PostgreSQL, replace it)."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _run(schema_editor, POSTGRESQL_FUNCTION)
        for table in TABLES:
            _run(schema_editor, f"DROP TRIGGER IF EXISTS {trigger_name(table)} ON {table}")
            _run(
                schema_editor,
                f"CREATE TRIGGER {trigger_name(table)} BEFORE DELETE ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION {FUNCTION}()",
            )
    elif vendor == "sqlite":
        for table in TABLES:
            _run(
                schema_editor,
                f"CREATE TRIGGER IF NOT EXISTS {trigger_name(table)} BEFORE DELETE ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{MESSAGE.format(table=table)}'); END",
            )
    else:
        raise NotImplementedError(
            f"No trigger refusing deletes of human data is written for {vendor}; add one in "
            "annotator/triggers.py."
        )


def drop_triggers(schema_editor: BaseDatabaseSchemaEditor) -> None:
    vendor = schema_editor.connection.vendor
    for table in TABLES:
        if vendor == "postgresql":
            _run(schema_editor, f"DROP TRIGGER IF EXISTS {trigger_name(table)} ON {table}")
        else:
            _run(schema_editor, f"DROP TRIGGER IF EXISTS {trigger_name(table)}")
    if vendor == "postgresql":
        _run(schema_editor, f"DROP FUNCTION IF EXISTS {FUNCTION}()")
