"""A judge's configuration, typed, with the capability table of server kinds.

One configuration serves every OpenAI-compatible server (OpenAI, vLLM, TGI,
Ollama, llama.cpp's server). A parameter the server kind does not accept is
refused with a message, never dropped silently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from corpus.choices import Language, either
from judging.evaluators.base import ConfigError
from judging.evaluators.registry import judge_class
from llm.config import CAPABILITIES, MAX_SEED, ModelConfig, check_types

__all__ = ["ConfigError", "JudgeConfig"]


@dataclass(frozen=True)
class JudgeConfig(ModelConfig):
    """A judge's settings. The endpoint, sampling, limits and prices are
    `llm.config.ModelConfig`'s (with a judge's defaults: GPT-4 as in the paper)."""

    protocol: str = "rubric"
    language: str = Language.ENGLISH
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4-0613"
    temperature: float = 0.6
    top_p: float | None = 0.9
    max_tokens: int = 1024
    seeds: tuple[int, ...] = (2023,)
    reask: int = 2
    # answers without a readable score, none read yet, after which a run stops
    # (judging.model_judging.ReadableWatch: until one is read, none is asked
    # again); 0: the watch is off, every unreadable answer is asked again
    stop_after_unreadable: int = 20
    template: str = ""
    baseline: str = ""
    counting: str = "consistent"
    device: str = "auto"  # a local model's device
    # whether each request carries its seed (L-Eval's judge sent none)
    send_seed: bool = True
    # ask for each answer token's log-probability: the probability of the score
    # (verdict) a judge gives is then its confidence, for the deferring judge
    logprobs: bool = False
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: object) -> JudgeConfig:
        """The settings checked (ConfigError says what is wrong, and nothing
        else escapes: a caller catches ConfigError alone)."""
        if not isinstance(data, dict):
            raise ConfigError("A judge's settings are a JSON object.")
        try:
            return cls._from_dict(data)
        except ConfigError:
            raise
        except (TypeError, ValueError) as error:
            raise ConfigError(str(error)) from None

    @classmethod
    def _from_dict(cls, data: dict) -> JudgeConfig:
        # a protocol's own defaults under what the configuration gives
        data = {**judge_class(data.get("protocol", "rubric")).defaults, **data}
        check_types(cls, data, ConfigError)
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"Unknown judge setting(s): {', '.join(unknown)}.")
        values = dict(data)
        if "seeds" in values:
            values["seeds"] = tuple(int(s) for s in values["seeds"])
        config = cls(**values)
        config.check()
        return config

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["seeds"] = list(self.seeds)
        return data

    def check(self) -> None:
        # The judges' protocols (judging.evaluators.judges) are registered by
        # name, and check their own settings (a pairwise baseline, a template).
        protocol = judge_class(self.protocol)
        if self.language not in Language.values:
            raise ConfigError(f"language: {either(Language)}.")
        if not self.seeds:
            raise ConfigError("Give at least one seed.")
        if not all(0 <= seed <= MAX_SEED for seed in self.seeds):
            raise ConfigError(f"seeds: whole numbers from 0 to {MAX_SEED}.")
        if self.max_tokens < 1:
            raise ConfigError("max_tokens must be positive.")
        self.check_endpoint(ConfigError)
        if self.logprobs and not CAPABILITIES[self.server]["logprobs"]:
            raise ConfigError(
                f"A {self.server} server does not give token probabilities here: set logprobs "
                "to false, or use an OpenAI, vLLM or TGI server."
            )
        if self.is_local and self.max_concurrency != 1:
            raise ConfigError(
                "A local model answers one request at a time: set "
                "max_concurrency to 1 (start more GPU workers to go faster)."
            )
        protocol.check(self)

    def sampling(self, seed: int) -> dict[str, Any]:
        """The parameters sent with a request (and stored in the ledger)."""
        params = self.request_params(seed if self.send_seed else None, self.max_tokens)
        if self.logprobs:
            params["logprobs"] = True
        return params
