"""Room reserved after a KV cache's prefix (llm.hf.reserved_cache): a step
appends in place, equal to transformers' concatenation; cropping keeps the
room; a full room or a batch operation falls back to concatenation; and the
packed shared-prefix decoding copies no layer while it decodes."""

import pytest

torch = pytest.importorskip("torch", reason="local-model tests need torch (make install-gpu)")


def filled_cache(layers=2, tokens=5, seed=0):
    from transformers import DynamicCache

    generator = torch.Generator().manual_seed(seed)
    cache = DynamicCache()
    for layer in range(layers):
        keys = torch.randn(1, 2, tokens, 4, generator=generator)
        values = torch.randn(1, 2, tokens, 4, generator=generator)
        cache.update(keys, values, layer)
    return cache


def step(tokens=3, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(1, 2, tokens, 4, generator=generator), torch.randn(
        1, 2, tokens, 4, generator=generator
    )


def test_appends_write_in_place_and_equal_concatenation():
    from llm.hf.reserved_cache import ReservedLayer, reserve_room

    plain, reserved = filled_cache(), filled_cache()
    assert reserve_room(reserved, 20)
    rooms = [layer.key_room.data_ptr() for layer in reserved.layers]
    assert all(isinstance(layer, ReservedLayer) for layer in reserved.layers)
    for n in range(4):
        keys, values = step(seed=n)
        for layer in range(2):
            expected = plain.update(keys, values, layer)
            got = reserved.update(keys, values, layer)
            assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    # 5 + 4 x 3 = 17 positions, all within the room: never reallocated
    assert reserved.get_seq_length() == plain.get_seq_length() == 17
    assert [layer.keys.data_ptr() for layer in reserved.layers] == rooms


def test_cropping_keeps_the_room_for_the_next_batch():
    from llm.hf.memory import cut_cache
    from llm.hf.reserved_cache import reserve_room

    cache = filled_cache()
    prefix = [layer.keys.clone() for layer in cache.layers]
    reserve_room(cache, 12)
    room = cache.layers[0].key_room
    keys, values = step(tokens=6)
    for layer in range(2):
        cache.update(keys, values, layer)
    cut_cache(cache, 5)
    assert cache.get_seq_length() == 5
    assert all(torch.equal(layer.keys, p) for layer, p in zip(cache.layers, prefix, strict=True))
    # a second reservation that fits leaves the room as it is
    reserve_room(cache, 10)
    assert cache.layers[0].key_room is room
    cache.update(*step(tokens=7, seed=3), 0)
    assert cache.layers[0].keys.data_ptr() == room.data_ptr()


def test_a_full_room_or_a_batch_operation_falls_back_to_concatenation():
    from llm.hf.reserved_cache import reserve_room

    plain, reserved = filled_cache(), filled_cache()
    reserve_room(reserved, 7)
    keys, values = step(tokens=3)  # 5 + 3 > 7
    for layer in range(2):
        expected = plain.update(keys, values, layer)
        got = reserved.update(keys, values, layer)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    assert reserved.layers[0].key_room is None
    # a batch operation makes new tensors: appends go on by concatenation, correctly
    other = filled_cache()
    reserve_room(other, 30)
    other.batch_repeat_interleave(2)
    keys, values = step(tokens=2)
    grown = other.update(keys.repeat(2, 1, 1, 1), values.repeat(2, 1, 1, 1), 0)
    assert grown[0].shape == (2, 2, 7, 4)
    assert other.layers[0].keys.data_ptr() != other.layers[0].key_room.data_ptr()
    assert not reserve_room(object(), 10)  # not a DynamicCache: nothing changed


def test_packed_decoding_copies_no_layer_after_the_prefix(tiny_model, monkeypatch):
    """Every decoding step of the packed layout writes into the room: the only
    concatenations are the prefix's own, one per layer; the greedy tokens are
    those of one prompt at a time."""
    from transformers.cache_utils import DynamicLayer

    from corpus.importers.synthetic import synthetic_transcript
    from generation.prompts import inference_prompt
    from llm.hf import HFModelSpec, LoadedModel, shared_prefix_generate

    loaded = LoadedModel(HFModelSpec(str(tiny_model), dtype="float32"))
    tokenizer = loaded.tokenizer
    prefix = tokenizer(inference_prompt(synthetic_transcript(lines=60)) + "\n\n")["input_ids"]
    questions = ["Who attended?", "What was decided about the budget?", "When?"]
    suffixes = [tokenizer(q, add_special_tokens=False)["input_ids"] for q in questions]
    one_by_one = shared_prefix_generate(loaded, prefix, suffixes, max_tokens=6).outputs

    concatenations = []
    original = DynamicLayer.update

    def counted(self, key_states, value_states, *args, **kwargs):
        concatenations.append(key_states.shape[-2])
        return original(self, key_states, value_states, *args, **kwargs)

    monkeypatch.setattr(DynamicLayer, "update", counted)
    run = shared_prefix_generate(
        loaded, prefix, suffixes, max_tokens=6, max_batch_size=8, layout="packed"
    )
    layers = loaded.model.config.num_hidden_layers
    assert run.outputs == one_by_one
    assert concatenations == [len(prefix)] * layers
