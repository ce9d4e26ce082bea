"""What a report covers: a selection of responses and evaluators, and the
choices of its judge-trust section (which evaluators are the humans, the
alt-test's margin and alignment function, the PPI gold sample, the planner's
target width)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from config.errors import Invalid
from corpus.choices import DatasetVersion, Language, Mode

VERSIONS = tuple(DatasetVersion.values)
MODES = tuple(Mode.values)
LANGUAGES = tuple(Language.values)
# analysis.alt_test.ALIGNMENTS, written here so that parsing a selection loads no numpy
ALIGNMENTS = ("neg_rmse", "neg_mae", "accuracy", "rank")
EPSILON_HINT = (
    "the authors suggest 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd workers"
)
MAX_WIDTH = 9.0  # the whole 1-10 scale
MAX_LABELLED = 100_000
# How the planner's action picks responses for humans (analysis.items_for_humans)
ITEM_METHODS = ("disagreement", "uncertainty", "random")
MAX_ITEMS = 10_000


class SelectionError(Invalid, ValueError):
    """A selection that cannot be used; the message says which part and why."""

    code = "selection_invalid"
    http_status = 400


@dataclass(frozen=True)
class Selection:
    dataset_version: str | None = None
    split: str | None = None
    mode: str | None = None
    language: str | None = Language.ENGLISH
    benchmark: str | None = None
    systems: tuple[str, ...] = field(default_factory=tuple)
    evaluators: tuple[str, ...] = field(default_factory=tuple)
    study: int | None = None
    gold_evaluator: str | None = None
    # The judge-trust section: the human evaluators (empty: every human
    # evaluator of the selection), the alt-test's epsilon (None: the authors'
    # rule of thumb for those humans) and alignment function, the gold ratings
    # per system PPI keeps as its labelled sample when every response has a
    # gold score, and the planner's target CI width on a system mean.
    humans: tuple[str, ...] = field(default_factory=tuple)
    epsilon: float | None = None
    alignment: str = "neg_rmse"
    ppi_labelled: int = 40
    target_width: float = 1.0

    def as_dict(self) -> dict:
        data = asdict(self)
        for name in ("systems", "evaluators", "humans"):
            data[name] = list(getattr(self, name))
        return data

    @classmethod
    def from_options(cls, options: dict) -> Selection:
        """From command options or query parameters (strings); checks every value."""

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
            items = value if isinstance(value, list | tuple) else str(value).split(",")
            return tuple(sorted({i.strip() for i in items if i and i.strip()}))

        version, mode = text("dataset_version"), text("mode")
        if version is not None and version not in VERSIONS:
            raise SelectionError(f"dataset_version {version!r}: choose from {', '.join(VERSIONS)}.")
        language = text("language") or Language.ENGLISH
        if language not in LANGUAGES:
            raise SelectionError(f"language {language!r}: choose from {', '.join(LANGUAGES)}.")
        if mode is not None and mode not in MODES:
            raise SelectionError(f"mode {mode!r}: choose from {', '.join(MODES)}.")
        study = text("study")
        if study is not None and not (study.isascii() and study.isdigit()):
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
        return cls(
            dataset_version=version,
            split=text("split"),
            mode=mode,
            language=language,
            benchmark=text("benchmark"),
            systems=names("systems"),
            evaluators=names("evaluators"),
            study=int(study) if study else None,
            gold_evaluator=text("gold_evaluator"),
            humans=names("humans"),
            epsilon=epsilon,
            alignment=alignment,
            ppi_labelled=int(labelled) if labelled else 40,
            target_width=width if width is not None else 1.0,
        )
