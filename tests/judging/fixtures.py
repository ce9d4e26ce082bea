"""Test helpers for judges, shared by every app's tests."""

from __future__ import annotations

from judging.models import Evaluator


def llm_judge(base_url: str, name: str = "local judge", **settings: object) -> Evaluator:
    """An LLM rubric judge on an OpenAI-compatible server (a fake one the test
    started): short time-outs and one re-ask, so that a failing call costs
    seconds; `settings` override any field of its configuration."""
    config = {
        "base_url": base_url,
        "model": "judge-model",
        "server": "vllm",
        "max_concurrency": 8,
        "seeds": [2023],
        "max_retries": 4,
        "timeout_s": 2,
        "reask": 1,
        **settings,
    }
    return Evaluator.objects.create(name=name, kind="llm_rubric", config=config)
