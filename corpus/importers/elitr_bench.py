"""Reads ELITR-Bench (questions, references, transcripts, the paper's responses
and scores) from any layout `sources.walk` understands, and checks it.

The result is an `ElitrBundle` of plain dataclasses; writing it to the
database is the services' job. Everything is validated here first, so a bad
file stops the import before anything is written.

File names follow the authors' README (github.com/utter-project/ELITR-Bench):
`elitr-bench-{qa,conv}_{split}.json`, `elitr-bench-czech-{qa,conv}_{split}.json`,
`elitr-bench-{qa,conv}_{split}_{st,mt}_{gpt-4-eval,all-eval}.json`, and for each
meeting folder the one transcript whose name starts with `transcript_MAN`
(what the authors' `preparation/extract_transcripts.py` takes).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from corpus.choices import DatasetVersion, Language, Mode
from corpus.importers.checks import check_no_nul, check_text_has_no_nul
from corpus.importers.errors import ImportFailure
from corpus.importers.limits import check_value, too_deep
from corpus.importers.sources import SourceFile, walk

PUBLISHED_PASSWORD = "utter"  # published in the authors' README; it only keeps crawlers out
VERSIONS = tuple(DatasetVersion.values)
LANGUAGES = tuple(Language.values)
QUESTION_TYPES = ("who", "what", "when", "howmany")
ANSWER_POSITIONS = ("B", "M", "E", "S")
MODES = tuple(Mode.values)
# The score fields of the generated-responses files, and the evaluator names
# Concord stores them under (reports and exports use these names).
SCORE_FIELDS = {
    "gpt-4-eval_score": "gpt-4-eval",
    "prometheus-eval_score": "prometheus-eval",
    "gold-human-eval_score": "gold-human-eval",
    "silver-human-eval_score": "silver-human-eval",
}

QUESTION_FILE = re.compile(
    r"^elitr-bench-(?P<czech>czech-)?(?P<version>qa|conv)_(?P<split>[A-Za-z0-9]+)\.json$"
)
RESPONSE_FILE = re.compile(
    r"^elitr-bench-(?P<version>qa|conv)_(?P<split>[A-Za-z0-9]+)_(?P<mode>st|mt)_"
    r"(?P<evaluators>[a-z0-9-]+-eval)\.json$"
)

Progress = Callable[[str, int, int], None]


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class MeetingQuestion:
    meeting_id: str
    question_id: str
    order: int
    question_type: str
    answer_position: str


@dataclass(frozen=True)
class QuestionWording:
    meeting_id: str
    question_id: str
    version: str
    language: str
    split: str
    text: str
    reference: str


@dataclass(frozen=True)
class Transcript:
    meeting_id: str
    text: str
    origin: str

    @property
    def word_count(self) -> int:
        return len(self.text.split())


@dataclass
class PaperResponse:
    system: str
    version: str
    split: str
    mode: str
    meeting_id: str
    question_id: str
    text: str
    scores: dict[str, float]
    origin: str


@dataclass
class ElitrBundle:
    meeting_splits: dict[str, str] = field(default_factory=dict)
    # the question files that name each meeting, in reading order (for messages)
    meeting_files: dict[str, list[str]] = field(default_factory=dict)
    questions: dict[tuple[str, str], MeetingQuestion] = field(default_factory=dict)
    wordings: list[QuestionWording] = field(default_factory=list)
    transcripts: dict[str, Transcript] = field(default_factory=dict)
    responses: list[PaperResponse] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    duplicate_responses_merged: int = 0
    warnings: list[str] = field(default_factory=list)

    def datasets(self) -> list[tuple[str, str, str]]:
        """(version, language, split) of every dataset in the bundle."""
        return sorted({(w.version, w.language, w.split) for w in self.wordings})


def parse_elitr_bench(
    source: str | Path,
    *,
    password: str | None = PUBLISHED_PASSWORD,
    versions: Iterable[str] = VERSIONS,
    languages: Iterable[str] = LANGUAGES,
    with_responses: bool = False,
    progress: Progress = _no_progress,
) -> ElitrBundle:
    versions = _checked_choice(versions, VERSIONS, "version")
    languages = _checked_choice(languages, LANGUAGES, "language")
    pwd = password.encode() if password else None

    question_files: dict[tuple[str, str, str], SourceFile] = {}
    response_files: dict[tuple[str, str, str, str], SourceFile] = {}
    transcript_files: dict[str, list[SourceFile]] = {}

    progress("scanning the source", 0, 1)
    for item in walk(source, pwd, _wanted):
        if match := QUESTION_FILE.match(item.name):
            language: str = Language.CZECH if match["czech"] else Language.ENGLISH
            if language in languages and match["version"] in versions:
                question_key = (language, match["version"], match["split"])
                _keep_one(question_files, question_key, item)
        elif match := RESPONSE_FILE.match(item.name):
            if with_responses and match["version"] in versions:
                response_key = (
                    match["version"],
                    match["split"],
                    match["mode"],
                    match["evaluators"],
                )
                _keep_one(response_files, response_key, item)
        else:  # a transcript_MAN* file (see _wanted)
            transcript_files.setdefault(item.parent_name, []).append(item)

    for language in languages:
        for version in versions:
            if not any(k[0] == language and k[1] == version for k in question_files):
                prefix = "elitr-bench-czech-" if language == Language.CZECH else "elitr-bench-"
                raise ImportFailure(
                    f"{source}: no {language} {version} question file found "
                    f"(looked for {prefix}{version}_<split>.json, also inside archives). "
                    f"Check SOURCE, or leave this out with --languages/--versions."
                )

    bundle = ElitrBundle()
    files = sorted(question_files.items()) + sorted(response_files.items())
    total = len(files) + 1
    # English first: it defines the meetings and questions the others must match.
    for done, (key, item) in enumerate(sorted(question_files.items(), key=_english_first), 1):
        progress("reading question files", done, total)
        language, version, split = key
        _read_question_file(bundle, item, language, version, split)
        bundle.files_read.append(item.origin)

    _attach_transcripts(bundle, transcript_files)
    progress("reading transcripts", len(question_files) + 1, total)

    seen: dict[tuple, PaperResponse] = {}
    for done, (response_key, item) in enumerate(
        sorted(response_files.items()), len(question_files) + 2
    ):
        progress("reading generated responses", done, total)
        version, split, mode, _ = response_key
        _read_response_file(bundle, item, version, split, mode, seen)
        bundle.files_read.append(item.origin)
    bundle.responses = list(seen.values())
    return bundle


def _checked_choice(values: Iterable[str], allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    values = tuple(v.strip() for v in values if v.strip())
    unknown = [v for v in values if v not in allowed]
    if unknown or not values:
        raise ImportFailure(
            f"Unknown {what} {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(allowed)}."
        )
    return values


def _wanted(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if QUESTION_FILE.match(name) or RESPONSE_FILE.match(name):
        return True
    return name.startswith("transcript_MAN") and name.endswith(".txt") and "/" in path


def _english_first(entry: tuple[tuple[str, str, str], SourceFile]) -> tuple:
    (language, version, split), _ = entry
    return (language != Language.ENGLISH, version != DatasetVersion.QA, split)


def _keep_one(files: dict, key: tuple, item: SourceFile) -> None:
    """The same file may sit in an archive and in an unpacked copy: fine if equal."""
    if key in files and files[key].read_bytes() != item.read_bytes():
        raise ImportFailure(
            f"Two different copies of {item.name}: {files[key].origin} and {item.origin}. "
            "Point SOURCE at one of them."
        )
    files.setdefault(key, item)


def _load_json(item: SourceFile) -> dict:
    try:
        data = json.loads(item.read_text())
    except RecursionError:  # Python's parser recurses once a level: the limit says more
        raise too_deep(item.origin) from None
    except ValueError as error:  # JSONDecodeError, or an integer of thousands of digits
        raise ImportFailure(f"{item.origin}: not valid JSON ({error}).") from error
    check_value(data, item.origin)  # depth and text lengths first: the walks below recurse
    if not isinstance(data, dict) or not isinstance(data.get("meetings"), list):
        raise ImportFailure(f"{item.origin}: expected an object with a 'meetings' list.")
    check_no_nul(data, item.origin)  # e.g. "... in meetings[2].questions[0].question"
    return data


def _field(obj: dict, key: str, where: str, item: SourceFile) -> str:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, str) or (key != "groundtruth-answer" and not value.strip()):
        raise ImportFailure(f"{item.origin}: {where}: missing or empty text field '{key}'.")
    return value


def _check_split(data: dict, split: str, item: SourceFile) -> None:
    if data.get("split") != split:
        raise ImportFailure(
            f"{item.origin}: the file says split {data.get('split')!r}, its name says {split!r}."
        )


def _read_question_file(
    bundle: ElitrBundle, item: SourceFile, language: str, version: str, split: str
) -> None:
    data = _load_json(item)
    _check_split(data, split, item)
    for meeting in data["meetings"]:
        meeting_id = _field(meeting, "id", "a meeting", item)
        bundle.meeting_files.setdefault(meeting_id, []).append(item.origin)
        known_split = bundle.meeting_splits.setdefault(meeting_id, split)
        if known_split != split:
            raise ImportFailure(
                f"{item.origin}: meeting {meeting_id} is in split {split} here "
                f"but in split {known_split} elsewhere."
            )
        questions = meeting.get("questions")
        if not isinstance(questions, list) or not questions:
            raise ImportFailure(f"{item.origin}: meeting {meeting_id} has no 'questions' list.")
        seen_ids: set[str] = set()
        for order, entry in enumerate(questions, 1):
            where = f"meeting {meeting_id}, question #{order}"
            question_id = _field(entry, "id", where, item)
            where = f"meeting {meeting_id}, question {question_id}"
            if question_id in seen_ids:
                raise ImportFailure(f"{item.origin}: {where}: the id appears twice.")
            seen_ids.add(question_id)
            question_type = _field(entry, "question-type", where, item)
            position = _field(entry, "answer-position", where, item)
            if question_type not in QUESTION_TYPES:
                raise ImportFailure(
                    f"{item.origin}: {where}: unknown question-type {question_type!r} "
                    f"(expected one of {', '.join(QUESTION_TYPES)})."
                )
            if position not in ANSWER_POSITIONS:
                raise ImportFailure(
                    f"{item.origin}: {where}: unknown answer-position {position!r} "
                    f"(expected one of {', '.join(ANSWER_POSITIONS)})."
                )
            parsed = MeetingQuestion(meeting_id, question_id, order, question_type, position)
            known = bundle.questions.setdefault((meeting_id, question_id), parsed)
            if known != parsed:
                raise ImportFailure(
                    f"{item.origin}: {where}: order, type or position differ from another "
                    f"version ({known.order}/{known.question_type}/{known.answer_position} vs "
                    f"{order}/{question_type}/{position})."
                )
            bundle.wordings.append(
                QuestionWording(
                    meeting_id,
                    question_id,
                    version,
                    language,
                    split,
                    _field(entry, "question", where, item),
                    _field(entry, "groundtruth-answer", where, item),
                )
            )


def _attach_transcripts(bundle: ElitrBundle, transcript_files: dict[str, list[SourceFile]]) -> None:
    for meeting_id in sorted(bundle.meeting_splits):
        candidates = transcript_files.get(meeting_id, [])
        distinct = {c.read_bytes(): c for c in candidates}
        if not distinct:
            asked_by = bundle.meeting_files[meeting_id]
            others = f" and {len(asked_by) - 1} other question file(s)" if len(asked_by) > 1 else ""
            raise ImportFailure(
                f"No transcript for meeting {meeting_id}, which {asked_by[0]}{others} "
                f"asked for: expected a file {meeting_id}/transcript_MAN*.txt in SOURCE."
            )
        chosen = sorted(distinct.values(), key=lambda c: c.path)[0]
        if len(distinct) > 1:
            bundle.warnings.append(
                f"meeting {meeting_id} has {len(distinct)} different transcript_MAN files; "
                f"took {chosen.origin}."
            )
        text = chosen.read_text()
        check_value(text, chosen.origin)
        check_text_has_no_nul(text, chosen.origin)
        bundle.transcripts[meeting_id] = Transcript(meeting_id, text, chosen.origin)


def _parse_score(raw: object, where: str, item: SourceFile) -> float:
    try:  # the files store scores as strings
        value = float(raw) if isinstance(raw, str | int | float) else math.nan
    except ValueError:
        value = math.nan
    if isinstance(raw, bool) or not math.isfinite(value) or not 1 <= value <= 10:
        raise ImportFailure(f"{item.origin}: {where}: score {raw!r} is not a number from 1 to 10.")
    return value


def _read_response_file(
    bundle: ElitrBundle,
    item: SourceFile,
    version: str,
    split: str,
    mode: str,
    seen: dict[tuple, PaperResponse],
) -> None:
    data = _load_json(item)
    _check_split(data, split, item)
    for meeting in data["meetings"]:
        meeting_id = _field(meeting, "id", "a meeting", item)
        if bundle.meeting_splits.get(meeting_id) != split:
            raise ImportFailure(
                f"{item.origin}: meeting {meeting_id} is not in the {split} question files; "
                "responses need their meeting and questions."
            )
        for entry in meeting.get("questions") or []:
            question_id = _field(entry, "id", f"meeting {meeting_id}", item)
            where = f"meeting {meeting_id}, question {question_id}"
            if (meeting_id, question_id) not in bundle.questions:
                raise ImportFailure(f"{item.origin}: {where}: no such question in the data files.")
            responses = entry.get("generated-responses")
            if not isinstance(responses, list):
                raise ImportFailure(f"{item.origin}: {where}: no 'generated-responses' list.")
            for response in responses:
                system = _field(response, "model", where, item)
                here = f"{where}, model {system}"
                text = response.get("generated-response") if isinstance(response, dict) else None
                if not isinstance(text, str):
                    raise ImportFailure(f"{item.origin}: {here}: 'generated-response' is missing.")
                # "<evaluator>_score" fields: the paper's four, or any other judge's
                # (a file Concord exported, or one the authors' scripts scored)
                scores = {
                    SCORE_FIELDS.get(key, key[: -len("_score")]): _parse_score(
                        response[key], f"{here}, {key}", item
                    )
                    for key in response
                    if key.endswith("_score")
                }
                key = (system, version, split, mode, meeting_id, question_id)
                parsed = PaperResponse(
                    system, version, split, mode, meeting_id, question_id, text, scores, item.origin
                )
                if key in seen:
                    _merge_duplicate(seen[key], parsed, here, item)
                    bundle.duplicate_responses_merged += 1
                else:
                    seen[key] = parsed


def _merge_duplicate(
    known: PaperResponse, new: PaperResponse, where: str, item: SourceFile
) -> None:
    """The all-eval file repeats responses of the gpt-4-eval file: store them once."""
    if known.text != new.text:
        raise ImportFailure(
            f"{item.origin}: {where}: the response differs from the one in {known.origin}."
        )
    for evaluator, score in new.scores.items():
        if evaluator in known.scores and known.scores[evaluator] != score:
            raise ImportFailure(
                f"{item.origin}: {where}: {evaluator} score {score:g} differs from "
                f"{known.scores[evaluator]:g} in {known.origin}."
            )
        known.scores[evaluator] = score
