"""The names of the files Concord hands out (reports, rating exports, admin actions).

A researcher who downloads a study's report in three formats on two days must
be able to tell the files apart in a downloads folder: a name says what the
file holds (the study or the selection), its format and the day it was made,
e.g. ``concord-report-qa-test2-st-2026-11-25.csv``.

Part of a name often comes from a study's name, which anyone with a researcher
account types (and which may arrive from an API client): it is reduced to
lower-case ASCII letters, digits, ``-`` and ``_`` by Django's ``slugify``
(accents folded: "Étude pilote" -> "etude-pilote"), so no name carries a quote,
a slash, a dot-dot or a control character into a ``Content-Disposition`` header
or a path.
"""

from __future__ import annotations

from datetime import date

from django.http import HttpResponse
from django.utils.http import content_disposition_header
from django.utils.text import slugify

# format -> (the word added to the name, the file extension)
FORMATS: dict[str, tuple[str, str]] = {
    "csv": ("", "csv"),
    "csv-wide": ("wide", "csv"),
    "json": ("", "json"),
    "latex": ("", "tex"),
    "html": ("", "html"),
    "png": ("", "png"),
    "svg": ("", "svg"),
    "parquet": ("", "parquet"),
    "table": ("", "txt"),
}
MAX_SUBJECT = 80  # characters of the subject kept: the whole name stays far below 255


def safe_part(text: str, *, limit: int = MAX_SUBJECT) -> str:
    """`text` as a piece of a file name: lower-case ASCII letters, digits, `-`
    and `_`; empty when nothing of it survives."""
    return slugify(str(text))[:limit].strip("-_")


def export_filename(subject: str, fmt: str, on: date) -> str:
    """concord-<subject>[-wide]-<YYYY-MM-DD>.<extension> for a file in `fmt`
    (one of FORMATS) made on `on`. A subject with nothing usable in it (a name
    in another script) becomes "export"."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: choose from {', '.join(FORMATS)}.")
    variant, extension = FORMATS[fmt]
    parts = ["concord", safe_part(subject) or "export", variant, on.isoformat()]
    return "-".join(p for p in parts if p) + "." + extension


def as_attachment(response: HttpResponse, filename: str) -> HttpResponse:
    """Mark `response` as a download named `filename` (Django writes the header)."""
    header = content_disposition_header(True, filename)
    assert header is not None  # only None for an inline answer without a name
    response["Content-Disposition"] = header
    return response
