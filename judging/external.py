"""Ratings collected elsewhere, from CSV or JSON Lines, as judgments of
imported evaluators (so that the analysis can use them).

Each record names a response and a score:

    response        a Concord response id, or instead all of:
    system, dataset_version, split, mode, meeting, question_id  (and optionally seed, language)
    evaluator       name of the evaluator (created as an imported evaluator if new)
    rater           optional: who rated (one judgment per rater)
    score           the score as given
    scale           optional "MIN-MAX" of that score (default 1-10); it is mapped
                    linearly onto 1-10 and kept raw beside

The whole file is checked before anything is written; a bad record stops the
import with its line number and the database stays as it was (a NUL character,
NaN or Infinity, an id or seed that is not a whole number in range included:
corpus/importers/checks.py).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.db.models import Q

from corpus.bulk import SyncCount, sync_rows
from corpus.choices import Language
from corpus.importers import ImportFailure
from corpus.importers.checks import check_no_nul, load_json_line
from corpus.importers.limits import (
    RowCount,
    allow_csv_fields,
    check_value,
    lines,
    text_lines,
    upload_limits,
)
from generation.models import Response
from judging import scores
from judging.evaluators import Precomputed, Scale
from judging.models import Evaluator, Judgment
from users.models import Project, default_project

KEY_FIELDS = ("system", "dataset_version", "split", "mode", "meeting", "question_id")
KNOWN = {"response", "evaluator", "rater", "score", "scale", "seed", "language", *KEY_FIELDS}
SCALE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*$")
MAX_ID = 2**63 - 1  # a response id (bigint)
MAX_SEED = 2**31 - 1  # a run's seed (a positive integer column)


@dataclass(frozen=True)
class ExternalRating:
    line: int
    response_key: tuple
    evaluator: str
    rater: str
    raw: float
    low: float
    high: float


def read_records(path: Path) -> list[tuple[int, dict]]:
    """The file's records with their line numbers, read a line at a time within
    the upload limits (corpus.importers.limits)."""
    if not path.is_file():
        raise ImportFailure(f"{path}: no such file.")
    limits = upload_limits()
    count = RowCount(limits)
    records = []
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        for number, line in lines(path, limits):
            if not line.strip():
                continue
            count.add(f"{path}, line {number}")
            record = load_json_line(line, f"{path}, line {number}")
            if not isinstance(record, dict):
                raise ImportFailure(f"{path}, line {number}: expected a JSON object.")
            records.append((number, record))
        return records
    if path.suffix.lower() != ".csv":
        raise ImportFailure(f"{path}: use a .csv or .jsonl file.")
    allow_csv_fields(limits)
    reader = csv.DictReader(text_lines(path, limits))
    try:
        if not reader.fieldnames:
            raise ImportFailure(f"{path}: no header line.")
        check_no_nul(list(reader.fieldnames), f"{path}, line 1")
        for row in reader:
            # the line a record starts on (a quoted cell may span lines)
            number = reader.line_num - sum(
                v.count("\n") for v in row.values() if isinstance(v, str)
            )
            if None in row:  # DictReader's place for cells past the header
                raise ImportFailure(
                    f"{path}, line {number}: {len(row[None])} more cell(s) than the header names."
                )
            count.add(f"{path}, line {number}")
            check_value(row, f"{path}, line {number}", limits)
            check_no_nul(row, f"{path}, line {number}")
            records.append((number, dict(row)))
    except csv.Error as error:
        raise ImportFailure(f"{path}, line {reader.line_num}: not valid CSV ({error}).") from error
    return records


def parse_ratings(path: str | Path) -> list[ExternalRating]:
    path = Path(path)
    ratings = []
    for number, record in read_records(path):
        where = f"{path}, line {number}"
        unknown = sorted(k for k in record if k not in KNOWN)
        if unknown:
            raise ImportFailure(f"{where}: unknown field(s) {', '.join(unknown)}.")
        evaluator = str(record.get("evaluator") or "").strip()
        if not evaluator:
            raise ImportFailure(f"{where}: 'evaluator' is missing.")
        low, high = 1.0, 10.0
        if record.get("scale") not in (None, ""):
            match = SCALE.match(str(record["scale"]))
            if not match or float(match[1]) >= float(match[2]):
                raise ImportFailure(f"{where}: scale {record['scale']!r} is not 'MIN-MAX'.")
            low, high = float(match[1]), float(match[2])
        score = record.get("score")
        try:
            raw = float(score) if isinstance(score, str | int | float) else math.nan
        except ValueError:
            raw = math.nan
        if not math.isfinite(raw) or not low <= raw <= high:
            raise ImportFailure(
                f"{where}: score {record.get('score')!r} is not a number from {low:g} to {high:g}."
            )
        if record.get("response") not in (None, ""):
            key: tuple = ("id", _whole(record["response"], "response", 1, MAX_ID, where))
        else:
            missing = [f for f in KEY_FIELDS if record.get(f) in (None, "")]
            if missing:
                raise ImportFailure(
                    f"{where}: give 'response' (an id) or all of {', '.join(KEY_FIELDS)}; "
                    f"missing {', '.join(missing)}."
                )
            seed = record.get("seed")
            key = (
                "natural",
                *(str(record[f]).strip() for f in KEY_FIELDS),
                str(record.get("language") or Language.ENGLISH),
                _whole(seed, "seed", 0, MAX_SEED, where) if seed not in (None, "") else None,
            )
        ratings.append(
            ExternalRating(
                number, key, evaluator, str(record.get("rater") or "").strip(), raw, low, high
            )
        )
    if not ratings:
        raise ImportFailure(f"{path}: no ratings in the file.")
    return ratings


def _whole(value, name: str, low: int, high: int, where: str) -> int:
    """A whole number from a CSV cell or a JSON value ("17", 17, 17.0), within
    [low, high]; anything else (a word, 1.5, a boolean, a number past the
    database's column) is refused."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip() if not isinstance(value, bool) else ""
    if not (text.isascii() and text.isdigit() and len(text) <= 20 and low <= int(text) <= high):
        raise ImportFailure(
            f"{where}: {name} {value!r} is not a whole number from {low} to {high}."
        )
    return int(text)


def resolve_responses(
    ratings: list[ExternalRating], path: Path, project: Project | None = None
) -> dict[tuple, int]:
    """The response each rating names, among `project`'s (every project's when
    None): another project's response is "no such response"."""
    stored = (
        Response.objects.all() if project is None else Response.objects.filter(run__project=project)
    )
    ids = {r.response_key[1] for r in ratings if r.response_key[0] == "id"}
    found = set(stored.filter(pk__in=ids).values_list("pk", flat=True))
    resolved: dict[tuple, int] = {("id", pk): pk for pk in found}
    natural = {r.response_key for r in ratings if r.response_key[0] == "natural"}
    if natural:
        condition = Q()
        for _, system, version, split, mode, meeting, question, language, seed in natural:
            condition |= Q(
                run__system__name=system,
                run__dataset__version=version,
                run__dataset__split=split,
                run__mode=mode,
                question__document__external_id=meeting,
                question__external_id=question,
                run__dataset__language=language,
                run__seed=seed,
            )
        for row in stored.filter(condition).values_list(
            "pk",
            "run__system__name",
            "run__dataset__version",
            "run__dataset__split",
            "run__mode",
            "question__document__external_id",
            "question__external_id",
            "run__dataset__language",
            "run__seed",
        ):
            resolved[("natural", *row[1:])] = row[0]
    for rating in ratings:
        if rating.response_key not in resolved:
            raise ImportFailure(
                f"{path}, line {rating.line}: no such response ({rating.response_key[1:]})."
            )
    return resolved


def _refuse_changes(ratings: list[ExternalRating], responses: dict, path: Path) -> None:
    """A file may add judgments, never overwrite stored ones (published scores included)."""
    stored = {
        (name, response, rater): score
        for name, response, rater, score in Judgment.objects.filter(
            evaluator__name__in={r.evaluator for r in ratings},
            seed__isnull=True,
            order=0,
            response_id__in={responses[r.response_key] for r in ratings},
        ).values_list("evaluator__name", "response_id", "rater", "raw_score")
    }
    for rating in ratings:
        old = stored.get((rating.evaluator, responses[rating.response_key], rating.rater))
        if old is not None and old != rating.raw:
            raise ImportFailure(
                f"{path}, line {rating.line}: {rating.evaluator} already holds score {old:g} for "
                f"response {responses[rating.response_key]}"
                f"{f' (rater {rating.rater})' if rating.rater else ''}; the file says "
                f"{rating.raw:g}. Stored judgments are never overwritten: import under another "
                "evaluator name."
            )


@transaction.atomic
def import_external_ratings(
    path: str | Path, project: Project | None = None
) -> dict[str, SyncCount]:
    """The file's ratings as judgments of imported evaluators of `project`
    (default: the default project), on that project's responses."""
    project = project or default_project()
    path = Path(path)
    ratings = parse_ratings(path)
    responses = resolve_responses(ratings, path, project)
    seen: dict[tuple, int] = {}
    for rating in ratings:
        key = (rating.evaluator, responses[rating.response_key], rating.rater)
        if key in seen:
            raise ImportFailure(
                f"{path}, line {rating.line}: the same evaluator, response and rater as "
                f"line {seen[key]}."
            )
        seen[key] = rating.line
    names = sorted({r.evaluator for r in ratings})
    # A file only adds to evaluators that ratings files made: the paper's gold
    # stays the paper's gold, a study's raters stay the study's.
    clashing = Evaluator.objects.filter(name__in=names).exclude(
        origin=Evaluator.Origin.RATINGS_FILE
    )
    if clashing.exists():
        raise ImportFailure(
            f"Evaluator(s) {', '.join(clashing.values_list('name', flat=True))} did not come "
            "from a ratings file (they are the paper's, a judge, a metric or a study); "
            "import under another name."
        )
    elsewhere = Evaluator.objects.filter(name__in=names).exclude(project=project)
    if elsewhere.exists():
        raise ImportFailure(
            f"Evaluator(s) {', '.join(elsewhere.values_list('name', flat=True))} belong to "
            f"another project than {project.slug!r}; import under another name."
        )
    _refuse_changes(ratings, responses, path)
    counts = {
        "evaluators": sync_rows(
            Evaluator.objects.filter(name__in=names),
            (
                {
                    "name": n,
                    "kind": Evaluator.Kind.IMPORTED,
                    "origin": Evaluator.Origin.RATINGS_FILE,
                    "description": f"Imported from {path.name}",
                    "config": {},
                    "raw_scale_min": 1,
                    "raw_scale_max": 10,
                    "project_id": project.pk,
                }
                for n in names
            ),
            key=("name",),
        )
    }
    evaluator_ids = dict(Evaluator.objects.filter(name__in=names).values_list("name", "pk"))
    counts["judgments"] = sync_rows(
        Judgment.objects.filter(evaluator_id__in=evaluator_ids.values(), seed__isnull=True),
        (
            Precomputed(Scale(r.low, r.high, whole=False)).judgment_fields(
                evaluator_ids[r.evaluator], responses[r.response_key], r.raw, rater=r.rater
            )
            for r in ratings
        ),
        key=scores.JUDGMENT_KEY,
    )
    return counts
