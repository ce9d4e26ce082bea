"""The database itself refuses to delete ratings, assignments and participants
(docs/human-studies.md): a BEFORE DELETE trigger per table, on PostgreSQL and
on SQLite (annotator/triggers.py). Items need none: an item with ratings is
held by their foreign key, and an item nobody has reached may be rebuilt.

Emptying a whole table is another matter: PostgreSQL's TRUNCATE (`flush`, the
tests' cleanup) fires no row trigger, and on SQLite Concord's backend
(core/sqlite_backend) sets the triggers aside while it flushes.
"""

from django.db import migrations

from annotator import triggers


def create(apps, schema_editor):
    triggers.create_triggers(schema_editor)


def drop(apps, schema_editor):
    triggers.drop_triggers(schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0003_study_responses"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
