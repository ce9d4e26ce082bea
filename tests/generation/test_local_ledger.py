"""Local generation goes through the model driver like every other call:
each prompt is a request on the call ledger (its hash, tokens and seconds),
and the same request asked again, by another run with the same settings, is
answered from the ledger with nothing decoded."""

from __future__ import annotations

import pytest

from generation.models import Response
from generation.runner import create_generation_run, run_generation
from llm.models import LLMCall
from tests.generation.test_batched import answers, local_system, qa_and_conv

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("mode", ["st", "mt"])
def test_every_local_answer_is_on_the_ledger_and_a_rerun_decodes_nothing(
    two_meetings, tiny_model, mode
):
    from llm import hf

    qa, conv = qa_and_conv()
    data = qa if mode == "st" else conv
    first = run_generation(
        create_generation_run(local_system(tiny_model, f"first-{mode}"), data, mode).pk
    )
    assert (first.status, first.done) == ("done", 12)
    calls = LLMCall.objects.filter(purpose="generate", base_url=f"hf://{tiny_model}")
    assert calls.count() == 12 and first.requests == 12 and first.cache_hits == 0
    for response in Response.objects.filter(run=first).select_related("call"):
        call = response.call
        assert call is not None and call.status == "ok" and call.raw_output == response.text
        assert call.messages[0]["role"] == "prompt" and len(call.request_hash) == 64
        assert (call.prompt_tokens, call.completion_tokens) == (
            response.input_tokens,
            response.output_tokens,
        )
        assert call.prompt_tokens > 100 and call.latency_ms > 0
    assert first.generated_tokens == sum(
        Response.objects.filter(run=first).values_list("output_tokens", flat=True)
    )
    assert first.generated_tokens > 0

    loaded = hf.load_model(hf.HFModelSpec(str(tiny_model), dtype="float32"))
    real_forward, forwards = loaded.model.forward, []

    def counted(*args, **kwargs):
        forwards.append(1)
        return real_forward(*args, **kwargs)

    loaded.model.forward = counted
    try:
        again = run_generation(
            create_generation_run(local_system(tiny_model, f"again-{mode}"), data, mode).pk
        )
    finally:
        loaded.model.forward = real_forward
    assert (again.status, again.done) == ("done", 12)
    assert forwards == []  # nothing decoded
    assert (again.requests, again.cache_hits, again.generated_tokens) == (0, 12, 0)
    assert calls.count() == 12  # no new call
    assert answers(again) == answers(first)


def test_settings_that_change_the_answers_are_new_requests(two_meetings, tiny_model):
    """The seed (sampling), max_new_tokens and the precision are in the request:
    a run that differs in one is asked anew."""
    qa, _ = qa_and_conv()
    run_generation(create_generation_run(local_system(tiny_model, "a"), qa, "st").pk)
    other = run_generation(
        create_generation_run(local_system(tiny_model, "b", max_new_tokens=5), qa, "st").pk
    )
    assert other.requests == 12 and other.cache_hits == 0
    params = LLMCall.objects.filter(purpose="generate").values_list("params", flat=True)
    assert {p["max_tokens"] for p in params} == {5, 6}
    assert all(p["local"]["dtype"] == "float32" for p in params)
