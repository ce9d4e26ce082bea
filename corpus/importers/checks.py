"""Checks that every reader of uploaded files shares (JSON Lines benchmarks,
ratings files, the ELITR-Bench JSON): what the database could not store, or
would store as something else, is refused with the file and the line, before
anything is written.

- A NUL character (U+0000, a raw byte or `\\u0000` in JSON): PostgreSQL
  refuses it in text, so the import would fail half-way with a database error
  naming nothing.
- NaN and Infinity (JSON has neither, Python's reader accepts both) and numbers
  too large to be finite (`1e999`): an id of `nan` or `inf` is no id.
"""

from __future__ import annotations

import json
import math

from corpus.importers.errors import ImportFailure
from corpus.importers.limits import check_value, too_deep

NUL = "\x00"


class _NotFinite(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise _NotFinite(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"{text} is too large to be a number")
    return value


def load_json_line(line: str, where: str) -> object:
    """One line of a JSON Lines file: valid JSON with finite numbers only, no NUL
    character in any text or key, within the upload limits' depth and field
    length (corpus.importers.limits). `where` (file and line) starts each message."""
    if NUL in line:  # a raw byte (JSON refuses it in a text, as a control character)
        raise ImportFailure(f"{where}: a NUL byte; remove it (no text may hold one).")
    try:
        value = json.loads(line, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:  # Python's parser recurses once a level: the limit says more
        raise too_deep(where) from None
    except _NotFinite as error:
        raise ImportFailure(f"{where}: {error} (ids and scores must be finite).") from error
    except ValueError as error:  # JSONDecodeError, or an integer of thousands of digits
        raise ImportFailure(f"{where}: not valid JSON ({error}).") from error
    check_value(value, where)  # depth first: the walks below recurse
    check_no_nul(value, where)
    return value


def nul_at(value, path: str = "") -> str | None:
    """Where the first NUL character sits in a JSON value (a key, or a text at
    `meetings[2].questions[0].question`), or None."""
    if isinstance(value, str):
        return (path or "the value") if NUL in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and NUL in key:
                return f"a field name ({here!r})"
            if (found := nul_at(item, here)) is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if (found := nul_at(item, f"{path}[{index}]")) is not None:
                return found
    return None


def check_no_nul(value, where: str) -> None:
    if (found := nul_at(value)) is not None:
        raise ImportFailure(
            f"{where}: a NUL character (\\u0000) in {found}; remove it (no text may hold one)."
        )


def check_text_has_no_nul(text: str, where: str) -> None:
    """A plain text file (a transcript): the line of the first NUL."""
    if NUL in text:
        line = text.count("\n", 0, text.index(NUL)) + 1
        raise ImportFailure(
            f"{where}, line {line}: a NUL character (\\u0000); remove it (no text may hold one)."
        )


def identifier(value, name: str, where: str) -> str:
    """An id given as text or as a whole number (`3`, `3.0`), as text; anything
    else (a boolean, a list, 3.5, an empty text) is refused."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    raise ImportFailure(f"{where}: '{name}' must be a non-empty string or a whole number.")
