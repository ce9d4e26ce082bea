"""Reading a report's CSV export as its opening line says to: skip the
lines that state the selection, then read the table."""

from __future__ import annotations

import csv
import io
import re


def preamble_and_rows(text: str) -> tuple[list[str], list[dict]]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    skip = int(re.search(r"skiprows=(\d+)", rows[0][0]).group(1))
    assert all(len(row) == 1 and row[0].startswith("#") for row in rows[:skip])
    header, *body = rows[skip:]
    return [row[0] for row in rows[:skip]], [dict(zip(header, row, strict=True)) for row in body]


def table_rows(text: str) -> list[dict]:
    return preamble_and_rows(text)[1]
