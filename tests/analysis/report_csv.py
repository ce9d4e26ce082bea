"""Reading a report's CSV export as its opening line says to: skip the
lines that state the selection, then read the table."""

from __future__ import annotations

import csv
import io
import re


def preamble_and_rows(text: str) -> tuple[list[str], list[dict]]:
    first = text.splitlines()[0]
    skip = int(re.search(r"skiprows=(\d+)", first).group(1))
    rows = list(csv.reader(io.StringIO(text)))
    preamble = [row[0] for row in rows[:skip]]
    assert all(len(row) == 1 and row[0].startswith("#") for row in rows[:skip])
    table = list(csv.DictReader(io.StringIO("\n".join(text.splitlines()[skip:]) + "\n")))
    return preamble, table


def table_rows(text: str) -> list[dict]:
    return preamble_and_rows(text)[1]
