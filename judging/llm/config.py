"""A judge's configuration, typed, with the capability table of server kinds.

One configuration serves every OpenAI-compatible server (OpenAI, vLLM, TGI,
Ollama, llama.cpp's server). A parameter the server kind does not accept is
refused with a message, never dropped silently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from generation.backends.capabilities import CAPABILITIES
from generation.config import MAX_SEED, check_types

PROTOCOLS = {
    "rubric": {"low": 1, "high": 10, "parser": "boxed"},
    "prometheus": {"low": 1, "high": 5, "parser": "prometheus"},
    "custom": {"low": 1, "high": 10, "parser": "boxed"},
    "pairwise": {"low": 0, "high": 2, "parser": "verdict"},
}
COUNTING = ("consistent", "per_order")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class JudgeConfig:
    protocol: str = "rubric"
    language: str = "en"
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4-0613"
    server: str = "openai"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.6
    top_p: float | None = 0.9
    max_tokens: int = 1024
    top_k: int | None = None
    repetition_penalty: float | None = None
    seeds: tuple[int, ...] = (2023,)
    max_concurrency: int = 8
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    # requests in flight to this endpoint and model from every run and worker
    endpoint_max_in_flight: int | None = None
    timeout_s: float = 120.0
    max_retries: int = 5
    reask: int = 2
    template: str = ""
    baseline: str = ""
    counting: str = "consistent"
    # server "hf": the model is loaded in the worker (a path or hub name)
    model_path: str = ""
    dtype: str = "auto"
    device: str = "auto"
    attn_implementation: str = "sdpa"
    price_input_per_million: float = 0.0
    price_output_per_million: float = 0.0
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> JudgeConfig:
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

    def as_dict(self) -> dict:
        data = asdict(self)
        data["seeds"] = list(self.seeds)
        return data

    def check(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"protocol {self.protocol!r}: one of {', '.join(PROTOCOLS)}.")
        if self.server not in CAPABILITIES:
            raise ConfigError(f"server {self.server!r}: one of {', '.join(CAPABILITIES)}.")
        if self.language not in ("en", "cs"):
            raise ConfigError("language: 'en' or 'cs'.")
        if not self.seeds:
            raise ConfigError("Give at least one seed.")
        if not all(0 <= seed <= MAX_SEED for seed in self.seeds):
            raise ConfigError(f"seeds: whole numbers from 0 to {MAX_SEED}.")
        if self.max_concurrency < 1 or self.max_tokens < 1 or self.max_retries < 0:
            raise ConfigError("max_concurrency and max_tokens must be positive, max_retries >= 0.")
        if self.server == "hf":
            if not self.model_path:
                raise ConfigError("A local (hf) judge needs model_path.")
            if self.max_concurrency != 1:
                raise ConfigError(
                    "A local model answers one request at a time: set "
                    "max_concurrency to 1 (start more GPU workers to go faster)."
                )
            from generation.backends.hf import ATTENTION, DTYPES

            if self.dtype not in DTYPES or self.attn_implementation not in ATTENTION:
                raise ConfigError(
                    f"dtype: one of {', '.join(DTYPES)}; attn_implementation: "
                    f"one of {', '.join(ATTENTION)}."
                )
        if self.protocol == "pairwise":
            if not self.baseline:
                raise ConfigError("A pairwise judge needs a baseline system to compare with.")
            if self.counting not in COUNTING:
                raise ConfigError(f"counting: one of {', '.join(COUNTING)}.")
        if self.protocol == "custom":
            from judging.prompts import validate_template

            validate_template(self.template)
        capabilities = CAPABILITIES[self.server]
        for name in ("top_p", "top_k", "repetition_penalty"):
            if getattr(self, name) is not None and not capabilities[name]:
                raise ConfigError(
                    f"A {self.server} server does not accept {name}; remove it from the "
                    "configuration or use a server that does (see the capability table)."
                )

    @property
    def endpoint(self) -> str:
        """What identifies the server in the ledger."""
        return f"hf://{self.model_path}" if self.server == "hf" else self.base_url

    @property
    def low(self) -> int:
        return (
            0
            if self.language == "cs" and self.protocol != "custom"
            else PROTOCOLS[self.protocol]["low"]
        )

    @property
    def high(self) -> int:
        return PROTOCOLS[self.protocol]["high"]

    def sampling(self, seed: int) -> dict:
        """The parameters sent with a request (and stored in the ledger)."""
        params: dict = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if CAPABILITIES[self.server]["seed"]:
            params["seed"] = seed
        extra_body = {}
        if self.top_k is not None:
            extra_body["top_k"] = self.top_k
        if self.repetition_penalty is not None:
            extra_body["repetition_penalty"] = self.repetition_penalty
        if extra_body:
            params["extra_body"] = extra_body
        return params
