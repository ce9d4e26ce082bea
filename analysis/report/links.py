"""Report links: every page that points at a report (the nav bar, the
console, run and study monitors, the demo) writes its URL here, with the
selection stated in full, so that the same selection always opens the same
report."""

from __future__ import annotations

from django.urls import reverse

from analysis.report.selection import Selection

REPORT_FORMATS = [
    ("html", "HTML"),
    ("json", "JSON"),
    ("csv", "CSV (long)"),
    ("csv-wide", "CSV (wide)"),
    ("latex", "LaTeX"),
]


def report_url(selection: Selection, fmt: str | None = None) -> str:
    query = selection.query_string(**({"format": fmt} if fmt and fmt != "html" else {}))
    return reverse("analysis-report") + ("?" + query if query else "")


def report_links(selection: Selection) -> list[dict]:
    """The report of a selection in each format."""
    return [
        {"format": fmt, "label": label, "url": report_url(selection, fmt)}
        for fmt, label in REPORT_FORMATS
    ]


def default_report_url() -> str:
    from analysis.report.scope import default_selection

    return report_url(default_selection())


def setting_selection(dataset, mode: str, **narrowed) -> Selection:
    """A dataset's setting (benchmark, version, split, language) in `mode`,
    narrowed by the selection's other fields (the project of the study or run
    it comes from among them: a member of several projects opens it too)."""
    return Selection(
        benchmark=dataset.benchmark.slug,
        dataset_version=dataset.version,
        split=dataset.split,
        mode=mode,
        language=dataset.language,
        **narrowed,
    )


def _project_slug(owned) -> str | None:
    return owned.project.slug if owned.project_id is not None else None


def study_selection(study) -> Selection:
    """A study's responses, in its setting."""
    return setting_selection(
        study.dataset, study.mode, study=study.pk, project=_project_slug(study)
    )


def judging_run_selection(run) -> Selection:
    """A judging run's judge against the default reference, on the run's setting."""
    return setting_selection(
        run.dataset, run.mode, judges=(run.evaluator.name,), project=_project_slug(run)
    )


def generation_run_selection(run) -> Selection:
    """A generation run's system on the run's setting."""
    return setting_selection(
        run.dataset, run.mode, systems=(run.system.name,), project=_project_slug(run)
    )


def selection_words(selection: Selection) -> str:
    """A short label of a selection's setting, for link titles."""
    words = " / ".join(selection.setting()) or "every setting"
    if selection.systems:
        words += f", {len(selection.systems)} systems ({', '.join(selection.systems)})"
    return words
