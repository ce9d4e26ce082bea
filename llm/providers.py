"""Providers behind one `ChatModel` interface (after inspect_ai's `ModelAPI`):
`generate` answers a chat request, `classify` says what a failure means for
the retry policy and the circuit breaker, `connection_key` names what the
endpoint gate shares between runs and workers.

The openai package is imported when a provider is made, not at start-up.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Any, cast

from llm.config import ModelConfig


class ProviderSetupError(RuntimeError):
    """The provider cannot be made (a missing key, a missing model)."""


@dataclass(frozen=True)
class ModelOutput:
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    fingerprint: str = ""


class FailureKind(enum.Enum):
    RATE_LIMITED = "rate_limited"  # wait (Retry-After) and ask again
    TRANSIENT = "transient"  # 5xx, timeout: back off and ask again
    CONNECTION = "connection"  # the endpoint cannot be reached: back off; the breaker counts
    FATAL = "fatal"  # asking again will not help (4xx, a local model's error)


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    message: str  # one line: "APIConnectionError: Connection error."
    retry_after: float | None = None


class ChatModel:
    """One model on one endpoint."""

    endpoint: str  # what identifies the server in the ledger
    model: str

    def generate(self, messages: list[dict], params: dict) -> ModelOutput:
        raise NotImplementedError

    def classify(self, error: Exception) -> Failure | None:
        """What a failure of `generate` means; None: not a call failure (a bug,
        a local model out of memory), which reaches the caller as it is."""
        return None

    def connection_key(self) -> str:
        return f"{self.endpoint} {self.model}"


class OpenAICompatibleModel(ChatModel):
    """Any OpenAI-compatible chat completions server (OpenAI, vLLM, TGI,
    Ollama, llama.cpp's server). The client's own retries are off: the retry
    policy is Concord's, one for every provider."""

    def __init__(self, config: ModelConfig) -> None:
        import openai

        key = os.environ.get(config.api_key_env, "")
        if not key and "api.openai.com" in config.base_url:
            raise ProviderSetupError(f"Set {config.api_key_env} to call {config.base_url}.")
        self.endpoint = config.base_url
        self.model = config.model
        self.openai = openai
        # Local servers (vLLM, Ollama, ...) accept any key; the openai client needs one.
        self.client = openai.OpenAI(
            base_url=config.base_url,
            api_key=key or "not-needed",
            max_retries=0,
            timeout=config.timeout_s,
        )

    def generate(self, messages: list[dict], params: dict) -> ModelOutput:
        answer = self.client.chat.completions.create(
            model=self.model,
            messages=cast(Any, messages),  # plain dicts, as the ledger stores them
            **params,
        )
        choice = answer.choices[0] if answer.choices else None
        usage = answer.usage
        return ModelOutput(
            text=(choice.message.content or "") if choice else "",
            finish_reason=(choice.finish_reason or "") if choice else "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            fingerprint=getattr(answer, "system_fingerprint", None) or "",
        )

    def classify(self, error: Exception) -> Failure | None:
        openai = self.openai
        if isinstance(error, openai.RateLimitError):
            return Failure(FailureKind.RATE_LIMITED, f"429: {error}", _retry_after(error))
        if isinstance(error, openai.APITimeoutError):  # before its parent, APIConnectionError
            return Failure(FailureKind.TRANSIENT, f"{type(error).__name__}: {error}")
        if isinstance(error, openai.APIConnectionError):
            return Failure(FailureKind.CONNECTION, f"{type(error).__name__}: {error}")
        if isinstance(error, openai.InternalServerError):
            return Failure(FailureKind.TRANSIENT, f"{type(error).__name__}: {error}")
        if isinstance(error, openai.APIStatusError):
            return Failure(FailureKind.FATAL, f"{error.status_code}: {error}")
        return None


def _retry_after(error) -> float | None:
    try:
        value = error.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


class LocalHFModel(ChatModel):
    """A local HF transformers model, loaded once per worker process and kept
    (`llm.hf.load_model`); answers one request at a time."""

    def __init__(self, config: ModelConfig, device: str = "auto") -> None:
        from llm.hf import HFChatClient, HFModelSpec

        self.endpoint = config.endpoint
        self.model = config.model_path
        self.client = HFChatClient(
            HFModelSpec(config.model_path, config.dtype, device, config.attn_implementation)
        )

    def generate(self, messages: list[dict], params: dict) -> ModelOutput:
        answer = self.client.chat.completions.create(model=self.model, messages=messages, **params)
        choice = answer.choices[0]
        return ModelOutput(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason or "",
            prompt_tokens=answer.usage.prompt_tokens,
            completion_tokens=answer.usage.completion_tokens,
            fingerprint=getattr(answer, "system_fingerprint", None) or "",
        )


def chat_model_for(config: ModelConfig) -> ChatModel:
    """The provider a configuration names."""
    if config.is_local:
        return LocalHFModel(config, getattr(config, "device", "auto"))
    return OpenAICompatibleModel(config)
