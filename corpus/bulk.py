"""Idempotent bulk writes: make the database hold `rows`, touching only what differs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import models

BATCH_SIZE = 2000


@dataclass
class SyncCount:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    @property
    def total(self) -> int:
        return self.created + self.updated + self.unchanged

    @property
    def changed(self) -> int:
        return self.created + self.updated


def sync_rows(
    existing: models.QuerySet,
    rows: Iterable[dict],
    key: Sequence[str],
    compare: Sequence[str] = (),
) -> SyncCount:
    """Create the rows whose `key` is missing from `existing` and update the
    `compare` fields of those that differ. Rows are dicts of field attnames
    (`document_id`, not `document`); rows already in place are left alone, and
    rows in the database but not in `rows` are never deleted."""
    model = existing.model
    current = {tuple(getattr(obj, f) for f in key): obj for obj in existing}
    count = SyncCount()
    to_create, to_update = [], []
    for row in rows:
        obj = current.get(tuple(row[f] for f in key))
        if obj is None:
            to_create.append(model(**row))
            continue
        changed = False
        for name in compare:
            if getattr(obj, name) != row[name]:
                setattr(obj, name, row[name])
                changed = True
        if changed:
            to_update.append(obj)
        else:
            count.unchanged += 1
    model.objects.bulk_create(to_create, batch_size=BATCH_SIZE)
    if to_update:
        model.objects.bulk_update(to_update, list(compare), batch_size=BATCH_SIZE)
    count.created, count.updated = len(to_create), len(to_update)
    return count


def id_map(queryset: models.QuerySet, key: Sequence[str]) -> dict[tuple, int]:
    """{natural key: primary key} for every row of `queryset`."""
    return {tuple(row[:-1]): row[-1] for row in queryset.values_list(*key, "pk")}
