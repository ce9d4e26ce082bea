"""The database itself refuses to delete ratings, assignments and participants
(docs/human-studies.md): a BEFORE DELETE trigger per table, on PostgreSQL and
on SQLite. Items need none: an item with ratings is held by their foreign key,
and an item nobody has rated may be rebuilt.

Emptying a whole table is another matter: PostgreSQL's TRUNCATE (`flush`, the
tests' cleanup) fires no row trigger, and on SQLite Concord's backend
(config/sqlite_backend) sets the triggers aside while it flushes.

On SQLite, a later migration that rebuilds one of these tables (SQLite alters
most columns by copying the table) drops its trigger with the old table:
tests/annotator/test_database_guards.py fails then, and that migration must
create it again.
"""

from django.db import migrations

TABLES = ("annotator_rating", "annotator_assignment", "annotator_participant")
MESSAGE = "Concord keeps human data: rows of {table} cannot be deleted (docs/human-studies.md)."

POSTGRESQL_FUNCTION = """
CREATE OR REPLACE FUNCTION annotator_refuse_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'Concord keeps human data: rows of % cannot be deleted (docs/human-studies.md).',
        TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END
$$
"""


def trigger_name(table: str) -> str:
    return f"{table}_refuse_delete"


def run(schema_editor, sql: str) -> None:
    # params=None: the SQL goes as written (PostgreSQL's RAISE uses % itself)
    schema_editor.execute(sql, params=None)


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        run(schema_editor, POSTGRESQL_FUNCTION)
        for table in TABLES:
            run(
                schema_editor,
                f"CREATE TRIGGER {trigger_name(table)} BEFORE DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION annotator_refuse_delete()",
            )
    elif vendor == "sqlite":
        for table in TABLES:
            run(
                schema_editor,
                f"CREATE TRIGGER {trigger_name(table)} BEFORE DELETE ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{MESSAGE.format(table=table)}'); END",
            )
    else:
        raise NotImplementedError(
            f"No trigger refusing deletes of human data is written for {vendor}; add one here."
        )


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table in TABLES:
        if vendor == "postgresql":
            run(schema_editor, f"DROP TRIGGER IF EXISTS {trigger_name(table)} ON {table}")
        else:
            run(schema_editor, f"DROP TRIGGER IF EXISTS {trigger_name(table)}")
    if vendor == "postgresql":
        run(schema_editor, "DROP FUNCTION IF EXISTS annotator_refuse_delete()")


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0003_study_responses"),
    ]

    operations = [migrations.RunPython(create_triggers, drop_triggers, elidable=False)]
