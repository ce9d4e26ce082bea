"""The console's form for an LLM judge: one that scores answers (rubric,
Prometheus, a custom template) or one that compares each with a baseline
system's (pairwise, L-Eval's battle): fields, not JSON. It writes the judge's
configuration (`judging.evaluators.JudgeConfig`) and checks it as the admin
and the API do (`checked_judge`: a refusal names the field)."""

from __future__ import annotations

from typing import Any

from django import forms

from console.forms import ProjectFormMixin
from judging.evaluators import ConfigError
from judging.evaluators.judges import checked_judge
from judging.evaluators.registry import judge_class
from judging.models import Evaluator
from llm.config import CAPABILITIES
from llm.keys import lent_keys

PROTOCOLS = [
    ("rubric", "Rubric 1-10 (the paper's GPT-4 prompt; answers \\boxed{N})"),
    ("prometheus", "Prometheus 1-5 (its prompt; answers [RESULT] N)"),
    ("custom", "Custom template (your prompt; answers \\boxed{N}, 1-10)"),
    ("pairwise", "Pairwise against a baseline (MT-Bench's prompt; answers [[A]], [[B]] or [[C]])"),
    (
        "leval_pairwise",
        "L-Eval's battle against a baseline (its prompt and settings, as L-Eval ran)",
    ),
    ("loogle_qa", "LooGLE's QA judge (its prompt and settings; answers True or False)"),
    ("loogle_summary", "LooGLE's summary judge (its prompt and settings; answers 0-100)"),
    (
        "helmet_longqa",
        "HELMET's long-QA judge (its GPT-4o prompt and settings; fluency x correctness)",
    ),
]
PAIRWISE = frozenset({"pairwise", "leval_pairwise"})
COUNTINGS = [
    ("consistent", "consistent: a pair wins when both orders agree (else a tie)"),
    ("per_order", "per order: each order counts, ties a half (L-Eval's win rate)"),
]
SERVERS = [(name, name) for name in CAPABILITIES]
# the configuration's keys each field writes (the rest keeps the judge's defaults)
CONFIG_FIELDS = (
    "protocol",
    "server",
    "base_url",
    "model",
    "model_path",
    "api_key_env",
    "temperature",
    "max_tokens",
    "price_input_per_million",
    "price_output_per_million",
    "template",
    "baseline",
    "counting",
    "logprobs",
)


def system_choices() -> list[tuple[str, str]]:
    """Systems that have single-turn responses, by name (a baseline is one)."""
    from generation.models import Response

    names = (
        Response.objects.filter(run__mode="st")
        .values_list("run__system__name", flat=True)
        .distinct()
        .order_by("run__system__name")
    )
    return [(name, name) for name in names]


def price_field(tokens: str, help_text: str = "") -> forms.DecimalField:
    return forms.DecimalField(
        label=f"Price per million {tokens} tokens (USD)",
        min_value=0,
        max_digits=10,
        decimal_places=4,
        required=False,
        help_text=help_text,
    )


class JudgeForm(ProjectFormMixin, forms.Form):
    name = forms.CharField(max_length=200, help_text="How reports and runs name this judge.")
    protocol = forms.ChoiceField(choices=PROTOCOLS, initial="rubric")
    server = forms.ChoiceField(
        choices=SERVERS,
        initial="openai",
        help_text="What serves the model: an OpenAI-compatible API (openai, vllm, tgi, "
        "ollama, llamacpp) or hf, a local model on a GPU worker.",
    )
    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        initial="https://api.openai.com/v1",
        help_text="The server's address (not for hf).",
    )
    model = forms.CharField(max_length=200, initial="gpt-4-0613")
    model_path = forms.CharField(
        max_length=500, required=False, help_text="hf only: the model's folder on the worker."
    )
    api_key_env = forms.ChoiceField(
        label="API key",
        required=False,
        help_text="One of the keys the operator lends (CONCORD_LLM_KEYS); each goes only to "
        "its own hosts. None: a server that needs no key.",
    )
    temperature = forms.FloatField(min_value=0, max_value=2, initial=0.6)
    max_tokens = forms.IntegerField(min_value=1, max_value=32768, initial=1024)
    price_input_per_million = price_field(
        "input", "Empty: the run's cost reads 'unknown', and a budget cannot cap it."
    )
    price_output_per_million = price_field("output")
    template = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="Custom protocol only: the prompt, with {question}, {response} and "
        "{reference}; the judge must answer \\boxed{N}.",
    )

    baseline = forms.ChoiceField(
        required=False,
        help_text="Pairwise only: the system every other system's answer is compared with "
        "(each pair in both orders).",
    )
    counting = forms.ChoiceField(
        choices=COUNTINGS,
        initial="consistent",
        required=False,
        help_text="Pairwise only: how the two orders of a pair make its result.",
    )

    logprobs = forms.BooleanField(
        required=False,
        label="Token probabilities",
        help_text="Ask the server for each answer token's log-probability (OpenAI, vLLM and "
        "TGI servers give them): the probability of each score it writes becomes the judge's "
        "confidence, by which it can defer the responses it is unsure of to a human.",
    )

    def __init__(self, *args: Any, instance: Evaluator | None = None, **kwargs: Any) -> None:
        self.instance = instance
        if instance is not None and not kwargs.get("data") and not (args and args[0]):
            config = instance.config if isinstance(instance.config, dict) else {}
            kwargs["initial"] = {
                "name": instance.name,
                "project": instance.project_id,
                **{k: config[k] for k in CONFIG_FIELDS if k in config},
            }
        super().__init__(*args, **kwargs)
        keys = sorted(lent_keys())
        key_field = self.fields["api_key_env"]
        assert isinstance(key_field, forms.ChoiceField)
        key_field.choices = [("", "no key"), *((k, k) for k in keys)]
        if "OPENAI_API_KEY" in keys and instance is None:
            key_field.initial = "OPENAI_API_KEY"
        baseline_field = self.fields["baseline"]
        assert isinstance(baseline_field, forms.ChoiceField)
        systems = system_choices()
        current = (self.initial or {}).get("baseline")
        if current and (current, current) not in systems:  # a baseline with no responses yet
            systems.append((current, current))
        baseline_field.choices = [("", "(none: a scoring judge)"), *systems]

    @property
    def kind(self) -> str:
        """The evaluator's kind its protocol makes."""
        if self.cleaned_data.get("protocol") in PAIRWISE:
            return Evaluator.Kind.LLM_PAIRWISE
        return Evaluator.Kind.LLM_RUBRIC

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        taken = Evaluator.objects.filter(name=name)
        if self.instance is not None:
            taken = taken.exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError("Another evaluator has this name.")
        return name

    def config(self) -> dict:
        """The judge's configuration from the cleaned fields (empty ones left to
        the judge's defaults)."""
        data = self.cleaned_data
        config: dict[str, Any] = {"protocol": data["protocol"], "server": data["server"]}
        for key in ("base_url", "model", "model_path", "api_key_env", "template"):
            if data.get(key):
                config[key] = data[key]
        if data["protocol"] in PAIRWISE:
            config["baseline"] = data.get("baseline") or ""
            config["counting"] = data.get("counting") or "consistent"
        own = judge_class(data["protocol"]).defaults
        for key in ("temperature", "max_tokens"):
            # a protocol run as its authors ran it (L-Eval's, LooGLE's) keeps their
            # setting unless the researcher changes the field
            if key in own and key not in self.changed_data and key not in (self.initial or {}):
                continue
            config[key] = data[key]
        if data.get("logprobs"):
            config["logprobs"] = True
        for key in ("price_input_per_million", "price_output_per_million"):
            if data.get(key) is not None:
                config[key] = float(data[key])
        return config

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        try:
            checked_judge(self.kind, self.config())
        except ConfigError as error:
            # the message names the setting; put it beside its field when there is one
            words = str(error)
            field = next((f for f in CONFIG_FIELDS if words.startswith(f)), None)
            if field is None and "template" in words.lower():
                field = "template"
            if field is None and "baseline" in words.lower():
                field = "baseline"
            if field is None and "token probabilities" in words:
                field = "logprobs"
            self.add_error(field if field in self.fields else None, words)
        return data
