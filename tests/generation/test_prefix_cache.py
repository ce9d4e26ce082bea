"""Shared-prefix KV cache reuse: identical greedy tokens, far less prefill."""

import pytest


@pytest.fixture(scope="module")
def loaded(tiny_model):
    from llm.hf import HFModelSpec, load_model

    return load_model(HFModelSpec(str(tiny_model), dtype="float32"))


def test_cache_reuse_gives_identical_greedy_tokens(loaded):
    from corpus.importers.synthetic import synthetic_transcript
    from generation.prompts import inference_prompt
    from llm.hf import shared_prefix_generate

    tokenizer = loaded.tokenizer
    prefix = tokenizer(inference_prompt(synthetic_transcript(lines=200)) + "\n\n")["input_ids"]
    questions = ["Who attended the meeting?", "When is the deadline?", "How many annotators?"]
    suffixes = [tokenizer(q)["input_ids"] for q in questions]
    cached = shared_prefix_generate(loaded, prefix, suffixes, max_tokens=12)
    plain = shared_prefix_generate(loaded, prefix, suffixes, max_tokens=12, use_cache=False)
    assert cached.outputs == plain.outputs
    assert all(len(o) > 0 for o in cached.outputs)
    assert cached.prefill_tokens == len(prefix) + sum(map(len, suffixes))
    assert plain.prefill_tokens == 3 * len(prefix) + sum(map(len, suffixes))
    # the same with sampling and a seed: reproducible
    first = shared_prefix_generate(
        loaded, prefix, suffixes[:1], max_tokens=8, seed=2023, temperature=0.8, top_p=0.9
    )
    again = shared_prefix_generate(
        loaded, prefix, suffixes[:1], max_tokens=8, seed=2023, temperature=0.8, top_p=0.9
    )
    assert first.outputs == again.outputs


def test_multi_turn_cache_carry_gives_identical_greedy_tokens(loaded):
    from llm.hf import Conversation

    tokenizer = loaded.tokenizer
    turns = [
        "(PERSON1) Hi. (PERSON2) We need three annotators.\nQ: Who spoke first?",
        " A: unsure.\nQ: How many annotators?",
        " A: three.\nQ: Anything else?",
    ]
    results = {}
    for carry in (True, False):
        conversation = Conversation(loaded, carry=carry)
        outputs = []
        for index, text in enumerate(turns):
            ids = tokenizer(text, add_special_tokens=index == 0)["input_ids"]
            outputs.append(conversation.turn(ids, max_tokens=8)[0])
        results[carry] = (outputs, conversation.prefill_tokens, len(conversation.ids))
    assert results[True][0] == results[False][0]
    total = results[True][2]
    assert results[True][1] == total  # each token computed once
    assert results[False][1] > total  # every turn from the start
