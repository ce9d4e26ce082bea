"""The typed configuration every model call starts from.

`ModelConfig` holds what generation systems and judges share: the endpoint
(an OpenAI-compatible server or a local HF model), sampling, limits and
prices. `generation.config.GenerationConfig` and
`judging.evaluators.config.JudgeConfig` extend it with their own settings; both
build request parameters here, once. A setting of the wrong JSON type, an
unknown setting, or a parameter the server kind does not accept is refused
with a message, never dropped silently.
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass

from core.errors import ErrorCode, Invalid

MAX_SEED = 2**31 - 1  # what the database stores

# What each kind of OpenAI-compatible server accepts besides temperature and
# max_tokens. A configuration that needs a parameter its server refuses is
# refused itself, never silently dropped. (OpenAI: no top_k /
# repetition_penalty; vLLM and llama.cpp take them as extra body fields; TGI's
# and Ollama's OpenAI routes take seed and top_p.)
# "logprobs": the chat completion's `logprobs: true` gives each answer token's
# log-probability (OpenAI's and vLLM's and TGI's servers document it; Ollama's and
# llama.cpp's OpenAI-compatible servers did not, and a local model does not yet)
CAPABILITIES: dict[str, dict[str, bool]] = {
    "openai": {
        "seed": True, "top_p": True, "repetition_penalty": False, "top_k": False,
        "logprobs": True,
    },
    "vllm": {
        "seed": True, "top_p": True, "repetition_penalty": True, "top_k": True, "logprobs": True
    },
    "tgi": {
        "seed": True, "top_p": True, "repetition_penalty": False, "top_k": False,
        "logprobs": True,
    },
    "ollama": {
        "seed": True, "top_p": True, "repetition_penalty": False, "top_k": False,
        "logprobs": False,
    },
    "llamacpp": {
        "seed": True, "top_p": True, "repetition_penalty": True, "top_k": True,
        "logprobs": False,
    },
    # a local HF transformers model on a GPU worker (llm.hf)
    "hf": {
        "seed": True, "top_p": True, "repetition_penalty": True, "top_k": True, "logprobs": False
    },
}  # fmt: skip

LOCAL_SERVER = "hf"


class ModelConfigError(Invalid, ValueError):
    """A configuration that cannot be used; the message says why."""

    code = ErrorCode.CONFIG_INVALID


def _type_ok(value, expected) -> bool:
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        return any(_type_ok(value, option) for option in typing.get_args(expected))
    if expected is type(None):
        return value is None
    if typing.get_origin(expected) is tuple:  # tuple[int, ...]
        (item, *_) = typing.get_args(expected)
        return isinstance(value, (list, tuple)) and all(_type_ok(v, item) for v in value)
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
    return isinstance(value, typing.get_origin(expected) or expected)


def check_types(cls, data, error: type[Exception]) -> None:
    """A configuration is a JSON object whose settings have their field's type
    (an int for a float is fine, a boolean for a number is not)."""
    if not isinstance(data, dict):
        raise error(f"A configuration is a JSON object, not {type(data).__name__}.")
    unknown = sorted(str(key) for key in set(data) - set(cls.__dataclass_fields__))
    if unknown:
        return  # the caller names them
    hints = typing.get_type_hints(cls)
    wrong = [
        f"{name} is {type_words(hints[name])}, not {json_type(value)}"
        for name, value in data.items()
        if not _type_ok(value, hints[name])
    ]
    if wrong:
        raise error(f"Wrong type: {'; '.join(wrong)}.")


def type_words(expected) -> str:
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        return " or ".join(type_words(option) for option in typing.get_args(expected))
    if typing.get_origin(expected) is tuple:
        return "a list of whole numbers"
    words = {
        type(None): "null",
        str: "a string",
        int: "a whole number",
        float: "a number",
        bool: "true or false",
        dict: "an object",
    }
    return words.get(expected, str(expected))


def json_type(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


@dataclass(frozen=True)
class ModelConfig:
    """Endpoint, sampling, limits and prices; subclasses set their own
    defaults by declaring a field again."""

    server: str = "openai"  # a key of CAPABILITIES; "hf": a local model on a gpu worker
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    # a local model: a path or hub name, loaded in the worker
    model_path: str = ""
    dtype: str = "auto"
    attn_implementation: str = "sdpa"
    # sampling
    temperature: float = 0.0
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    # limits: per run, and requests in flight to this endpoint and model from
    # every run and worker
    max_concurrency: int = 8
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    endpoint_max_in_flight: int | None = None
    max_retries: int = 5
    # prices (USD per million tokens), for the ledger's cost
    price_input_per_million: float = 0.0
    price_output_per_million: float = 0.0

    @property
    def is_local(self) -> bool:
        return self.server == LOCAL_SERVER

    @property
    def endpoint(self) -> str:
        """What identifies the server in the ledger."""
        return f"hf://{self.model_path}" if self.is_local else self.base_url

    @property
    def model_name(self) -> str:
        return self.model_path if self.is_local else self.model

    def check_endpoint(self, error: type[Exception]) -> None:
        """The checks every model configuration needs, raising `error`."""
        if self.server not in CAPABILITIES:
            raise error(f"server {self.server!r}: one of {', '.join(CAPABILITIES)}.")
        if self.max_concurrency < 1 or self.max_retries < 0:
            raise error("max_concurrency must be positive, max_retries >= 0.")
        for name in ("price_input_per_million", "price_output_per_million", "temperature"):
            value = getattr(self, name)
            if not 0 <= value < float("inf"):
                raise error(f"{name}: a number of 0 or more, not {value}.")
        if not 0 < self.timeout_s < float("inf"):
            raise error(f"timeout_s: a positive number of seconds, not {self.timeout_s}.")
        for name in ("requests_per_minute", "tokens_per_minute", "endpoint_max_in_flight"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise error(f"{name}: a positive whole number, or null for no limit.")
        if self.is_local:
            from llm.hf import ATTENTION, DTYPES

            if not self.model_path:
                raise error("A local (hf) model needs model_path.")
            if self.dtype not in DTYPES or self.attn_implementation not in ATTENTION:
                raise error(
                    f"dtype: one of {', '.join(DTYPES)}; attn_implementation: "
                    f"one of {', '.join(ATTENTION)}."
                )
            return
        from llm.keys import KeyBindingError, check_host, check_key_name

        check_base_url(self.base_url, error)
        try:
            check_key_name(self.api_key_env, error)
            check_host(self.base_url, error)
        except KeyBindingError as bad:
            raise error(str(bad)) from None
        for name in ("top_p", "top_k", "repetition_penalty"):
            if getattr(self, name) is not None and not CAPABILITIES[self.server][name]:
                raise error(
                    f"A {self.server} server does not accept {name}; remove it from the "
                    "configuration or use a server that does (see the capability table)."
                )

    def request_params(self, seed: int | None, max_tokens: int) -> dict:
        """The parameters sent with a request (and stored in the ledger)."""
        params: dict = {"temperature": self.temperature, "max_tokens": max_tokens}
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if seed is not None and CAPABILITIES[self.server]["seed"]:
            params["seed"] = seed
        extra_body: dict[str, float] = {}
        if self.top_k is not None:
            extra_body["top_k"] = self.top_k
        if self.repetition_penalty is not None:
            extra_body["repetition_penalty"] = self.repetition_penalty
        if extra_body:
            params["extra_body"] = extra_body
        return params


def check_base_url(base_url: str, error: type[Exception]) -> None:
    """A server's address that a worker can call: http(s), a host, an optional
    port, a path; no credentials, query or fragment (they would be written to
    the ledger with every call). An empty one is refused too: the client would
    not fall back to a provider's host, it would fail at the first call, so
    the provider's own URL is written out (https://api.openai.com/v1)."""
    from urllib.parse import urlsplit

    example = "e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1"
    if not base_url.strip():
        raise error(f"base_url: the server's URL is required ({example}).")
    if base_url != base_url.strip() or any(c.isspace() for c in base_url):
        raise error(f"base_url {base_url!r}: no spaces ({example}).")
    parts = urlsplit(base_url)
    if parts.scheme.lower() not in ("http", "https"):
        raise error(f"base_url {base_url!r}: an http:// or https:// URL ({example}).")
    try:
        parts.port  # noqa: B018 (reading it checks it)
    except ValueError:
        raise error(f"base_url {base_url!r}: the port is not a number.") from None
    if not parts.hostname:
        raise error(f"base_url {base_url!r}: the URL names no host ({example}).")
    if parts.username is not None or parts.password is not None:
        raise error(
            f"base_url {base_url!r}: no user or password in the URL (a key comes from api_key_env)."
        )
    if parts.query or parts.fragment or base_url.endswith(("?", "#")):
        raise error(f"base_url {base_url!r}: no query or fragment ({example}).")
