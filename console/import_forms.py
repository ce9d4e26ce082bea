"""The benchmark upload's options: the format, and what each format's reader
takes (the benchmark's slug and name, split, task, version and language; for
ELITR-Bench the versions, languages and whether the paper's responses come
too). The same form reads the upload's POST, the preview's query string and
the confirmation's POST, so the three cannot disagree."""

from __future__ import annotations

from typing import Any

from django import forms

from corpus.choices import DatasetVersion, Language
from corpus.importers.formats import (
    babilong,
    generic,
    leval,
    longbench_v2,
    loogle,
    ruler,
    zeroscrolls,
)
from corpus.ruler.constants import RANDOM_SEED
from corpus.ruler.constants import TASKS as RULER_TASKS
from corpus.ruler.orders import DEFAULT_TOKENIZER, BadOrder, lengths_from, ruler_order

ELITR = "elitr_bench"
FORMAT_CHOICES = [
    (ELITR, "ELITR-Bench: the authors' archives (.zip, .tar), several at once"),
    (leval.FORMAT, "L-Eval: one task file (.jsonl)"),
    (zeroscrolls.FORMAT, "ZeroSCROLLS: one task's rows (.jsonl or .parquet)"),
    (longbench_v2.FORMAT, "LongBench v2: its data.json (or .jsonl, .parquet)"),
    (ruler.FORMAT, "RULER: one task file (validation.jsonl), its task and length as the task"),
    (babilong.FORMAT, "BABILong: one task at one length (qa1_4k.json, or the task qa1-4k)"),
    (loogle.FORMAT, "LooGLE: one task's file (shortdep_qa.jsonl, or the task shortdep_qa)"),
    (generic.FORMAT, "Generic: one question per record (.jsonl, .csv or .parquet)"),
]
DEFAULT_SLUGS = {
    leval.FORMAT: "leval",
    zeroscrolls.FORMAT: "zeroscrolls",
    longbench_v2.FORMAT: "longbench_v2",
    ruler.FORMAT: "ruler",
    babilong.FORMAT: "babilong",
    loogle.FORMAT: "loogle",
}
DEFAULT_SPLITS = {zeroscrolls.FORMAT: "validation", ruler.FORMAT: "validation"}
# The prefix of a generic file's mapping in the preview's query string.
MAPPING_PREFIX = "map-"


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class BenchmarkImportForm(forms.Form):
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial=ELITR)
    upload = forms.FileField(
        label="Files",
        required=False,
        widget=MultipleFileInput(),
        help_text="ELITR-Bench: its archives as published (data.zip, the transcripts' "
        ".tar.zip files, generated-responses.zip), all at once. The others: one file.",
    )
    benchmark = forms.SlugField(
        required=False,
        max_length=64,
        help_text="A short name (letters, digits, - and _). L-Eval and ZeroSCROLLS: "
        "leval and zeroscrolls unless given; a generic file needs one.",
    )
    name = forms.CharField(
        required=False, max_length=200, help_text="Shown in reports; default: the slug."
    )
    split = forms.SlugField(
        required=False, max_length=50, help_text="Default: test (ZeroSCROLLS, RULER: validation)."
    )
    task = forms.SlugField(
        required=False,
        max_length=100,
        help_text="L-Eval, ZeroSCROLLS: default the file's name; RULER: the task and its "
        "length (niah_single_1-4096); BABILong: the task and its length (qa1-4k) unless the file's "
        "name holds them; LooGLE: the task (shortdep_qa) unless it is the file's name; generic: "
        "for records that name none.",
    )
    dataset_version = forms.ChoiceField(
        choices=DatasetVersion.choices, initial=DatasetVersion.QA, label="Version"
    )
    language = forms.ChoiceField(choices=Language.choices, initial=Language.ENGLISH)
    versions = forms.MultipleChoiceField(
        choices=DatasetVersion.choices,
        initial=list(DatasetVersion.values),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="ELITR-Bench versions",
    )
    languages = forms.MultipleChoiceField(
        choices=Language.choices,
        initial=list(Language.values),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="ELITR-Bench languages",
    )
    with_responses = forms.BooleanField(
        required=False,
        initial=True,
        label="ELITR-Bench: with the paper's responses and their scores",
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        chosen = data.get("format")
        if chosen == generic.FORMAT and not data.get("benchmark"):
            self.add_error("benchmark", "A generic file needs a benchmark slug.")
        if chosen == ELITR:
            for name in ("versions", "languages"):
                if not data.get(name):
                    self.add_error(name, "Choose at least one.")
        return data

    @property
    def is_elitr(self) -> bool:
        return self.cleaned_data["format"] == ELITR

    def reader_options(self) -> dict[str, Any]:
        """What corpus.importers.formats' reader of the chosen format takes."""
        data = self.cleaned_data
        chosen = data["format"]
        return {
            "benchmark": data["benchmark"] or DEFAULT_SLUGS[chosen],
            "benchmark_name": data["name"] or None,
            "split": data["split"] or DEFAULT_SPLITS.get(chosen, "test"),
            "version": data["dataset_version"],
            "language": data["language"],
            "task": data["task"],
        }

    def elitr_options(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "versions": tuple(v for v in DatasetVersion.values if v in data["versions"]),
            "languages": tuple(v for v in Language.values if v in data["languages"]),
            "with_responses": data["with_responses"],
        }


def mapping_from(query: Any) -> dict[str, str] | None:
    """A generic file's mapping from the preview's query string (Concord's
    field -> the file's column); None when none was chosen yet (guess it)."""
    chosen = {
        key[len(MAPPING_PREFIX) :]: value
        for key, value in query.items()
        if key.startswith(MAPPING_PREFIX) and key[len(MAPPING_PREFIX) :] in generic.FIELDS
    }
    return chosen or None


class MakeRulerForm(forms.Form):
    """RULER made here at the lengths asked for (corpus.ruler: its authors'
    scripts, seeded), then imported by a worker."""

    tasks = forms.MultipleChoiceField(
        choices=[(t, t) for t in RULER_TASKS],
        initial=["niah_single_1", "vt"],
        widget=forms.CheckboxSelectMultiple,
        help_text="The tasks that need no download (the others: import the files the "
        "authors' scripts make).",
    )
    lengths = forms.CharField(
        initial="4096,8192,16384", max_length=200, help_text="Tokens, with commas."
    )
    samples = forms.IntegerField(initial=50, min_value=1, help_text="Per task and length.")
    seed = forms.IntegerField(initial=RANDOM_SEED, help_text="The same seed makes the same data.")
    tokenizer = forms.CharField(
        initial=DEFAULT_TOKENIZER,
        max_length=300,
        help_text="What the lengths count: tiktoken:<encoding>, or hf:<a model folder on the "
        "worker>.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            data["order"] = ruler_order(
                data["tasks"],
                lengths_from(data["lengths"]),
                data["samples"],
                data["seed"],
                data["tokenizer"],
            )
        except BadOrder as error:
            raise forms.ValidationError(str(error)) from None
        return data
