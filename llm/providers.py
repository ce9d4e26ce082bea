"""Providers behind one `ChatModel` interface (after inspect_ai's `ModelAPI`):
`generate` answers a chat request, `classify` says what a failure means for
the retry policy and the circuit breaker, `connection_key` names what the
endpoint gate shares between runs and workers.

The openai package is imported when a provider is made, not at start-up.
"""

from __future__ import annotations

import enum
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import ConcordError, ErrorCode, UpstreamError
from llm.config import ModelConfig

if TYPE_CHECKING:
    import ssl

    import openai


class ProviderSetupError(ConcordError, RuntimeError):
    """The provider cannot be made (a missing key, a missing model)."""

    code = ErrorCode.PROVIDER_UNAVAILABLE


class MalformedAnswer(UpstreamError):
    """A server answered 200 with something that is not a chat completion
    (a transient failure: the call is retried)."""

    code = ErrorCode.MODEL_ANSWER_MALFORMED


@dataclass(frozen=True)
class ModelOutput:
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    fingerprint: str = ""
    # each answer token and its log-probability, where asked for and given
    token_logprobs: list[list] | None = None


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

    def generate_many(
        self,
        requests: list[tuple[list[dict], dict]],
        on_output: Callable[[int, ModelOutput], None],
    ) -> None:
        """Answer many (messages, params) requests, each answer handed to
        `on_output` as it is done: one after another here; a provider that can
        do better (a local model decoding prompts together) says how."""
        for index, (messages, params) in enumerate(requests):
            on_output(index, self.generate(messages, params))

    def classify(self, error: Exception) -> Failure | None:
        """What a failure of `generate` means; None: not a call failure (a bug,
        a local model out of memory), which reaches the caller as it is."""
        return None

    def connection_key(self) -> str:
        return f"{self.endpoint} {self.model}"

    def close(self) -> None:
        """Let go of connections (the run is over)."""


class OpenAICompatibleModel(ChatModel):
    """Any OpenAI-compatible chat completions server (OpenAI, vLLM, TGI,
    Ollama, llama.cpp's server). The client's own retries are off: the retry
    policy is Concord's, one for every provider."""

    def __init__(self, config: ModelConfig) -> None:
        import httpx
        import openai

        from llm.keys import check_host, key_for, sends_key_to

        # a configuration is a researcher's (llm.keys): only a server the install
        # allows, and only a key lent to its host
        check_host(config.base_url, ProviderSetupError)
        key = key_for(config.api_key_env, config.base_url)
        if not key and sends_key_to(config.api_key_env, config.base_url):
            raise ProviderSetupError(f"Set {config.api_key_env} to call {config.base_url}.")
        self.endpoint = config.base_url
        self.model = config.model
        self.openai = openai
        self.httpx = httpx
        self.key = key or "not-needed"  # local servers (vLLM, Ollama, ...) accept any key
        self.timeout = config.timeout_s
        self.ssl = _ssl_context()  # here, once: the calling threads would each make one
        self.local = threading.local()
        self.clients: list[openai.OpenAI] = []
        self.guard = threading.Lock()

    @property
    def client(self) -> openai.OpenAI:
        """This thread's openai client. One per calling thread, because httpx's
        connection pool looks at every connection (a poll each) for every
        request: with 64 threads on one pool that was most of a run's CPU."""
        client = getattr(self.local, "client", None)
        if client is None:
            client = self.local.client = self.openai.OpenAI(
                base_url=self.endpoint,
                api_key=self.key,
                max_retries=0,  # the retry policy is Concord's, one for every provider
                timeout=self.timeout,
                http_client=self.openai.DefaultHttpxClient(verify=self.ssl),
            )
            with self.guard:
                self.clients.append(client)
        return client

    def close(self) -> None:
        with self.guard:
            clients, self.clients = self.clients, []
        for client in clients:
            client.close()

    def generate(self, messages: list[dict], params: dict) -> ModelOutput:
        # The client's plain POST, with the body as the ledger stores it: the
        # typed `chat.completions.create` spends about a millisecond a request
        # transforming dicts it sends unchanged and building a model of which
        # five fields are read, which at 64 requests in flight on two cores is
        # what limits a run. Errors are the client's own (RateLimitError, ...).
        extra = params.get("extra_body") or {}
        body = {"model": self.model, "messages": messages, **params, **extra}
        body.pop("extra_body", None)
        answer = self.client.post("/chat/completions", body=body, cast_to=self.httpx.Response)
        try:
            data = answer.json()
            choice = (data.get("choices") or [None])[0] or {}
            usage = data.get("usage") or {}
            return ModelOutput(
                text=(choice.get("message") or {}).get("content") or "",
                finish_reason=choice.get("finish_reason") or "",
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                fingerprint=data.get("system_fingerprint") or "",
                token_logprobs=token_logprobs(choice.get("logprobs")),
            )
        except (ValueError, TypeError, AttributeError) as error:
            raise MalformedAnswer(
                f"the server's answer is not a chat completion ({type(error).__name__}: "
                f"{str(error)[:200]}; it began {answer.text[:120]!r})"
            ) from None

    def classify(self, error: Exception) -> Failure | None:
        openai = self.openai
        if isinstance(error, MalformedAnswer):  # a proxy's error page, a cut body
            return Failure(FailureKind.TRANSIENT, f"MalformedAnswer: {error}")
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


def token_logprobs(logprobs: object) -> list[list] | None:
    """A chat completion's `logprobs` as [[token, logprob], ...], or None where
    the server sent none or sent them in another shape: the answer is kept
    either way, a judgment without a probability is still a judgment."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        return None
    out = []
    for entry in content:
        token = entry.get("token") if isinstance(entry, dict) else None
        value = entry.get("logprob") if isinstance(entry, dict) else None
        if (
            not isinstance(token, str)
            or not isinstance(value, int | float)
            or isinstance(value, bool)
            or not value <= 0
        ):
            return None
        out.append([token, float(value)])
    return out


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process: httpx makes one per client otherwise (25 ms,
    reading the certificate store), and a run makes a client per thread."""
    import httpx

    return httpx.create_ssl_context()


def _retry_after(error) -> float | None:
    try:
        value = error.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


# What a local model's request may hold (a judge's sampling, or a generation
# run's): anything else is refused, never dropped.
LOCAL_PARAMS = {"max_tokens", "temperature", "top_p", "seed", "extra_body", "local"}
RAW_PROMPT = "prompt"  # a message of this role is the whole prompt, already rendered


def raw_prompt(text: str) -> list[dict]:
    """A request whose prompt is rendered already (a generation run's, with
    its chat template or the paper's format): one message of role "prompt",
    sent to the model as it is."""
    return [{"role": RAW_PROMPT, "content": text}]


def _raw_text(messages: list[dict]) -> str | None:
    if len(messages) == 1 and messages[0].get("role") == RAW_PROMPT:
        return str(messages[0]["content"])
    return None


class LocalHFModel(ChatModel):
    """A local HF transformers model (`llm.hf`), loaded once per worker process
    and kept. It answers a chat request (a judge's) or a rendered prompt (a
    generation run's) with `generate`, and many requests at once with
    `generate_many`: prompts sharing a prefix (a meeting's transcript) have it
    computed once and are decoded together, up to `max_batch_size` at a time
    (fewer when memory is short)."""

    def __init__(self, config: ModelConfig, device: str = "auto", spec: Any = None) -> None:
        from llm.hf import HFModelSpec

        self.endpoint = config.endpoint
        self.model = config.model_path
        self.spec = spec or HFModelSpec(
            config.model_path, config.dtype, device, config.attn_implementation
        )
        self.max_batch_size = int(getattr(config, "max_batch_size", 1))
        self.prefix_cache = bool(getattr(config, "prefix_cache", True))
        self.fingerprint = f"hf:{self.spec.path}"

    @property
    def loaded(self) -> Any:
        """The loaded model (`llm.hf.LoadedModel`), loaded on first use."""
        from llm.hf import load_model

        return load_model(self.spec)

    @staticmethod
    def options(params: dict) -> dict[str, Any]:
        """A request's parameters as `llm.hf`'s decoding keywords."""
        unsupported = sorted(set(params) - LOCAL_PARAMS)
        if unsupported:
            raise TypeError(f"Not supported by the local backend: {', '.join(unsupported)}.")
        extra = params.get("extra_body") or {}
        return {
            "max_tokens": params.get("max_tokens", 512),
            "temperature": params.get("temperature", 0.0),
            "top_p": params.get("top_p"),
            "top_k": extra.get("top_k"),
            "repetition_penalty": extra.get("repetition_penalty"),
            "seed": params.get("seed"),
        }

    def generate(self, messages: list[dict], params: dict) -> ModelOutput:
        options = self.options(params)
        text = _raw_text(messages)
        if text is None:
            answer, finish, prompt, completion = self.loaded.generate(messages, **options)
            return ModelOutput(answer, finish, prompt, completion, self.fingerprint)
        outputs: list[ModelOutput] = []
        self.generate_many([(messages, params)], lambda _, output: outputs.append(output))
        return outputs[0]

    def generate_many(
        self,
        requests: list[tuple[list[dict], dict]],
        on_output: Callable[[int, ModelOutput], None],
    ) -> None:
        """Answer rendered prompts that share their parameters together, each
        answer handed to `on_output` (its index, its output) as soon as it is
        done. Out of memory with one prompt alone is `PromptOutOfMemory`
        naming its length."""
        from os.path import commonprefix

        from llm.hf import PromptOutOfMemory, is_out_of_memory, shared_prefix_generate

        texts = [_raw_text(messages) for messages, _ in requests]
        params = [p for _, p in requests]
        if any(t is None for t in texts) or any(p != params[0] for p in params):
            super().generate_many(requests, on_output)  # chat requests: one at a time
            return
        prompts = [t for t in texts if t is not None]
        loaded = self.loaded
        tokenizer = loaded.tokenizer
        shared = commonprefix(prompts) if self.prefix_cache and len(prompts) > 1 else ""
        # Cut at the last line end: where the prompts part (the transcript's end)
        # whichever of a meeting's questions are asked, so that a resumed run
        # splits its prompts where the first try did.
        shared = shared[: shared.rfind("\n") + 1]
        prefix_ids = tokenizer(shared, add_special_tokens=True)["input_ids"] if shared else []
        suffixes = [
            tokenizer(p[len(shared) :], add_special_tokens=not prefix_ids)["input_ids"]
            for p in prompts
        ]

        def answered(index: int, output: list[int], finish: str) -> None:
            text = tokenizer.decode(output, skip_special_tokens=True).strip()
            prompt_tokens = len(prefix_ids) + len(suffixes[index])
            on_output(
                index, ModelOutput(text, finish, prompt_tokens, len(output), self.fingerprint)
            )

        options = self.options(params[0])
        longest = len(prefix_ids) + max(map(len, suffixes))
        try:
            shared_prefix_generate(
                loaded,
                prefix_ids,
                suffixes,
                max_tokens=options.pop("max_tokens"),
                use_cache=bool(prefix_ids),
                max_batch_size=self.max_batch_size,
                on_answer=answered,
                **options,
            )
        except Exception as error:
            if is_out_of_memory(error) and not isinstance(error, PromptOutOfMemory):
                raise PromptOutOfMemory(longest, error) from error
            raise


def chat_model_for(config: ModelConfig) -> ChatModel:
    """The provider a configuration names."""
    if config.is_local:
        return LocalHFModel(config, getattr(config, "device", "auto"))
    return OpenAICompatibleModel(config)
