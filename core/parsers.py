"""The API's JSON parser: a malformed body is a 400 with a clear message, never a 500.

Python's json parser recurses once per nesting level: 100,000 nested lists
raise RecursionError (not a ValueError, so DRF's parser let it through as a
500), and a body just under the interpreter's limit parses but breaks the
first code that walks it again deeper in the stack. Bodies nested deeper than
``MAX_DEPTH`` are refused here, and so are numbers too large for a float
(``1e999`` parses to infinity).
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Iterable, Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding  # type: ignore[attr-defined]  # not in the stubs
from rest_framework.utils.json import strict_constant

MAX_DEPTH = 64


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (0 for a scalar), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is too large")
    return number


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, answering 400 to what it let through as 500s."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:  # any JSON value: an array too, not only the object the stubs say
        encoding = get_encoding(parser_context or {})  # text codecs only
        try:
            data = json.load(
                codecs.getreader(encoding)(stream),
                parse_constant=strict_constant if self.strict else None,
                parse_float=finite_float,
            )
        except RecursionError:
            raise ParseError(
                f"JSON parse error - the body nests too deeply (at most {MAX_DEPTH} levels)."
            ) from None
        except ValueError as error:  # also bad UTF-8 and over-long integers
            raise ParseError(f"JSON parse error - {error}") from None
        if json_depth(data) > MAX_DEPTH:
            raise ParseError(
                f"JSON parse error - the body nests too deeply (at most {MAX_DEPTH} levels)."
            )
        return data
