"""What a report covers: a selection of responses and evaluators."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from config.errors import Invalid
from corpus.choices import DatasetVersion, Language, Mode

VERSIONS = tuple(DatasetVersion.values)
MODES = tuple(Mode.values)


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

    def as_dict(self) -> dict:
        data = asdict(self)
        data["systems"], data["evaluators"] = list(self.systems), list(self.evaluators)
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
            raise SelectionError(f"dataset version {version!r}: choose from {', '.join(VERSIONS)}.")
        if mode is not None and mode not in MODES:
            raise SelectionError(f"mode {mode!r}: choose from {', '.join(MODES)}.")
        study = text("study")
        if study is not None and not (study.isascii() and study.isdigit()):
            raise SelectionError(f"study {study!r}: give the study's numeric id.")
        return cls(
            dataset_version=version,
            split=text("split"),
            mode=mode,
            language=text("language") or Language.ENGLISH,
            benchmark=text("benchmark"),
            systems=names("systems"),
            evaluators=names("evaluators"),
            study=int(study) if study else None,
            gold_evaluator=text("gold_evaluator"),
        )
