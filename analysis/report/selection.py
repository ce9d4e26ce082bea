"""What a report covers, and every choice its conclusions rest on.

A selection is the responses (dataset version, split, mode, language,
benchmark, systems, a study's responses) and the evaluators (which are the
judges, which the humans, which the reference), plus the choices of the
judge-trust section (the alt-test's margin and alignment function, the
evaluator whose ratings are PPI's labelled set and how many of them, the
planner's target width, and whether raters flagged by quality control count).
Nothing here is chosen implicitly: a report states each value it used and,
for those left to a default, the rule that chose it (analysis.report.scope).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from urllib.parse import urlencode

from core.errors import ErrorCode, Invalid
from corpus.choices import DatasetVersion, Language, Mode
from users.projects import AnyUser, is_site_admin, visible_projects

VERSIONS = tuple(DatasetVersion.values)
MODES = tuple(Mode.values)
LANGUAGES = tuple(Language.values)
# analysis.statistics.alt_test.ALIGNMENTS, written here so that parsing a selection loads no numpy
ALIGNMENTS = ("neg_rmse", "neg_mae", "accuracy", "rank")
EPSILON_HINT = (
    "the authors suggest 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd workers"
)
MAX_WIDTH = 9.0  # the whole 1-10 scale
MAX_LABELLED = 100_000
DEFAULT_LABELLED = 40
# How the planner's action picks responses for humans (analysis.planning.items_for_humans)
ITEM_METHODS = ("disagreement", "uncertainty", "random", "deferred")
DEFERRAL_ALPHAS = (0.1, 0.2, 0.3)  # the targets the report shows (analysis.report.deferral)
MAX_ITEMS = 10_000
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off", "")


# Every parameter of a selection, as the report page, its API and the
# agreement_report command take them (gold_evaluator: reference's former name).
PARAMETERS = (
    "project",
    "dataset_version",
    "split",
    "mode",
    "language",
    "benchmark",
    "systems",
    "evaluators",
    "study",
    "judges",
    "humans",
    "reference",
    "gold_evaluator",
    "epsilon",
    "alignment",
    "ppi_labels",
    "ppi_labelled",
    "target_width",
    "include_flagged",
    "rater_models",
    "length_control",
    "style_control",
)


class SelectionError(Invalid, ValueError):
    """A selection that cannot be used; the message says which part and why."""

    code = ErrorCode.SELECTION_INVALID


@dataclass(frozen=True)
class Selection:
    # The project whose runs are read (its slug); None: every project, which
    # only a site admin may ask for (analysis.report.selection.selection_for).
    project: str | None = None
    dataset_version: str | None = None
    split: str | None = None
    mode: str | None = None
    language: str | None = Language.ENGLISH
    benchmark: str | None = None
    systems: tuple[str, ...] = field(default_factory=tuple)
    # Only these evaluators are read at all (empty: every evaluator).
    evaluators: tuple[str, ...] = field(default_factory=tuple)
    study: int | None = None
    # The judges whose trust is assessed (empty: every evaluator that is not a
    # human one and not the reference).
    judges: tuple[str, ...] = field(default_factory=tuple)
    # The human evaluators of the judge-trust section (empty: every human
    # evaluator of the selection).
    humans: tuple[str, ...] = field(default_factory=tuple)
    # The evaluator correlations, rankings, gold bins and calibration are read
    # against (None: the human evaluator covering most of the selection,
    # analysis.report.scope.choose_reference).
    reference: str | None = None
    # The alt-test's epsilon (None: the authors' rule of thumb per population)
    # and alignment function.
    epsilon: float | None = None
    alignment: str = "neg_rmse"
    # PPI's labelled set: the evaluator whose ratings it uses (None: the
    # reference) and, when that evaluator scores every response, how many of
    # them per system it keeps as a random sample.
    ppi_labels: str | None = None
    ppi_labelled: int = DEFAULT_LABELLED
    # The planner's target CI width on a system mean.
    target_width: float = 1.0
    # Whether raters flagged by quality control count (failed-check raters never do).
    include_flagged: bool = False
    # Whether the report fits the rater models (crowd-kit: seconds per thousand
    # ratings, so only when asked for)
    rater_models: bool = False
    # Whether the Bradley-Terry rankings from scores also come length-controlled
    # (one logistic fit per resample and meeting: seconds on large selections)
    length_control: bool = False
    # Whether they also come style-controlled: the length and FastChat's markdown
    # elements (headers, lists, bold) held fixed; the answers' texts are read for it
    style_control: bool = False

    def setting(self) -> tuple[str, ...]:
        """The parts of the responses' setting that are given: benchmark,
        version, split, mode, language."""
        parts = (self.benchmark, self.dataset_version, self.split, self.mode, self.language)
        return tuple(str(p) for p in parts if p)

    def as_dict(self) -> dict:
        data = asdict(self)
        for name in ("systems", "evaluators", "judges", "humans"):
            data[name] = list(getattr(self, name))
        return data

    def query(self, **extra) -> dict[str, str]:
        """The selection as query parameters (what differs from the defaults),
        the one way report links are written."""
        params: dict[str, str] = {}
        defaults = Selection()
        for name, value in self.as_dict().items():
            if value == getattr(defaults, name) and name != "language":
                continue
            if value in (None, [], ""):
                continue
            if isinstance(value, list):
                params[name] = join_names(value)
            elif isinstance(value, bool):
                params[name] = "1" if value else "0"
            elif isinstance(value, float):
                params[name] = f"{value:g}"
            else:
                params[name] = str(value)
        params.update({k: str(v) for k, v in extra.items() if v not in (None, "")})
        return params

    def query_string(self, **extra) -> str:
        return urlencode(self.query(**extra))

    @classmethod
    def from_options(cls, options: dict) -> Selection:
        """From command options or query parameters (strings); checks every value
        that can be checked without the database (analysis.report.scope checks names)."""

        for name, value in options.items():
            # the database cannot even be asked for one (PostgreSQL refuses NUL in text)
            values = value if isinstance(value, list | tuple) else [value]
            if any("\x00" in str(v) for v in values if v is not None):
                raise SelectionError(f"{name}: a NUL character (\\u0000) cannot be selected.")

        def text(name: str) -> str | None:
            value = options.get(name)
            if value is None or (isinstance(value, str) and not value.strip()):
                return None
            return str(value).strip()

        def names(name: str) -> tuple[str, ...]:
            value = options.get(name) or ""
            values = value if isinstance(value, list | tuple) else [value]
            items = [item for text in values for item in split_names(str(text))]
            return tuple(sorted({i.strip() for i in items if i and i.strip()}))

        project = text("project")
        if project is not None and not re.fullmatch(r"[-a-zA-Z0-9_]{1,64}", project):
            raise SelectionError(f"project {project!r}: give the project's slug.")
        version, mode = text("dataset_version"), text("mode")
        if version is not None and version not in VERSIONS:
            raise SelectionError(f"dataset_version {version!r}: choose from {', '.join(VERSIONS)}.")
        language = text("language") or Language.ENGLISH
        if language not in LANGUAGES:
            raise SelectionError(f"language {language!r}: choose from {', '.join(LANGUAGES)}.")
        if mode is not None and mode not in MODES:
            raise SelectionError(f"mode {mode!r}: choose from {', '.join(MODES)}.")
        study = text("study")
        if study is not None and not (study.isascii() and study.isdigit() and len(study) <= 10):
            raise SelectionError(f"study {study!r}: give the study's numeric id.")

        def number(name: str, low: float, high: float, hint: str) -> float | None:
            value = text(name)
            if value is None:
                return None
            try:
                parsed = float(value)
            except ValueError:
                parsed = math.nan
            if not (value.isascii() and math.isfinite(parsed) and low <= parsed <= high):
                raise SelectionError(f"{name} {value!r}: {hint}.")
            return parsed

        epsilon = number("epsilon", 0, 1, f"give a number from 0 to 1 ({EPSILON_HINT})")
        width = number(
            "target_width", 0.01, MAX_WIDTH, f"give a CI width from 0.01 to {MAX_WIDTH:g} points"
        )
        alignment = text("alignment") or "neg_rmse"
        if alignment not in ALIGNMENTS:
            raise SelectionError(f"alignment {alignment!r}: choose from {', '.join(ALIGNMENTS)}.")
        labelled = text("ppi_labelled")
        if labelled is not None and not (
            labelled.isascii()
            and labelled.isdigit()
            and len(labelled) <= 6
            and 2 <= int(labelled) <= MAX_LABELLED
        ):
            raise SelectionError(
                f"ppi_labelled {labelled!r}: give a whole number of gold ratings per system, "
                f"from 2 to {MAX_LABELLED:,}."
            )
        include_flagged = flag(
            options,
            "include_flagged",
            "1 (flagged raters count) or 0 (they are left out, the default)",
        )
        rater_models = flag(
            options, "rater_models", "1 (fit the rater models) or 0 (not, the default)"
        )
        length_control = flag(
            options,
            "length_control",
            "1 (length-controlled rankings too) or 0 (not, the default)",
        )
        style_control = flag(
            options,
            "style_control",
            "1 (style-controlled rankings too: length, headers, lists, bold) or 0 (not, the "
            "default)",
        )
        reference = text("reference")
        alias = text("gold_evaluator")  # the parameter's former name, still accepted
        if reference and alias and reference != alias:
            raise SelectionError(
                f"reference {reference!r} and gold_evaluator {alias!r} differ: give one "
                "(gold_evaluator is reference's former name)."
            )
        return cls(
            project=project,
            dataset_version=version,
            split=text("split"),
            mode=mode,
            language=language,
            benchmark=text("benchmark"),
            systems=names("systems"),
            evaluators=names("evaluators"),
            study=int(study) if study else None,
            judges=names("judges"),
            humans=names("humans"),
            reference=reference or alias,
            epsilon=epsilon,
            alignment=alignment,
            ppi_labels=text("ppi_labels"),
            ppi_labelled=int(labelled) if labelled else DEFAULT_LABELLED,
            target_width=width if width is not None else 1.0,
            include_flagged=include_flagged,
            rater_models=rater_models,
            length_control=length_control,
            style_control=style_control,
        )


def flag(options: Mapping, name: str, meaning: str) -> bool:
    """A yes/no option: a bool as it is, or a word of TRUE_WORDS or
    FALSE_WORDS (absent: no)."""
    value = options.get(name)
    if isinstance(value, bool):
        return value
    word = "" if value is None else str(value).strip().lower()
    if word not in TRUE_WORDS + FALSE_WORDS:
        raise SelectionError(f"{name} {str(value)[:50]!r}: give {meaning}.")
    return word in TRUE_WORDS


def selection_for(user: AnyUser, selection: Selection) -> Selection:
    """The selection as this user may read it: a project he sees (another
    project's slug or study is "no such", as one that does not exist), and
    his only project when none is named. A site admin may read every project
    at once; a member of several projects names one."""
    visible = visible_projects(user)
    if selection.project is not None:
        if not visible.filter(slug=selection.project).exists():
            raise SelectionError(f"project {selection.project!r}: no such project.")
    elif not is_site_admin(user):
        slugs = list(visible.values_list("slug", flat=True)[:21])
        if len(slugs) == 1:
            selection = replace(selection, project=slugs[0])
        elif not slugs:
            raise SelectionError("you are a member of no project: an owner of one adds you.")
        else:
            raise SelectionError(f"project: name one of yours ({', '.join(slugs[:20])}).")
    return selection  # its study and names are checked in the project (analysis.report.scope.check)


# --- Lists of names in one parameter ---------------------------------------------------------
# Names are separated by commas; a comma (or backslash) inside a name is written
# with a backslash before it (Llama-3\, 8B), so a system named with a comma
# can be selected in a link, a command's --systems and the builder's checkboxes.


def join_names(names: Iterable[str]) -> str:
    """Names in one parameter: "A,B\\, C" for A and "B, C"."""
    return ",".join(n.replace("\\", "\\\\").replace(",", "\\,") for n in names)


def split_names(text: str) -> list[str]:
    """The names of one parameter (join_names' inverse): commas separate names
    unless a backslash escapes them; a backslash escapes the next character."""
    names, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            names.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\")  # a trailing backslash is itself
    names.append("".join(current))
    return names
