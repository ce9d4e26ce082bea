"""Batched local decoding: a meeting's questions decoded together over one
shared prefix, conversations side by side, the batch sized from memory and
halved when memory runs out. The reference is transformers' own generate(),
one prompt at a time (the sequential path), in float32."""

import pytest

from generation.models import GenerationRun, Response
from generation.runner import create_generation_run, run_generation

QUESTIONS = [
    "Who attended the meeting?",
    "When is the deadline for the annotation of the whole corpus, and who decides it?",
    "How many annotators?",
    "Why?",
    "What did PERSON2 say about the budget and the schedule of the project next year?",
]


@pytest.fixture(scope="module")
def lively_model(tiny_model, tmp_path_factory):
    """The tiny Llama with larger random weights: its greedy answers differ
    from question to question, so that a mixed-up row would show."""
    from corpus.importers.synthetic import synthetic_transcript
    from tests.fakes.tiny_model import build_tiny_llama

    return build_tiny_llama(
        tmp_path_factory.mktemp("lively-llama"),
        synthetic_transcript(lines=300),
        initializer_range=0.4,
    )


@pytest.fixture
def fresh(lively_model):
    """A model of its own (not the process's shared one): tests change its
    end-of-sequence ids and its forward."""
    from llm.hf import HFModelSpec, LoadedModel

    return LoadedModel(HFModelSpec(str(lively_model), dtype="float32"))


def prompt_parts(loaded):
    from corpus.importers.synthetic import synthetic_transcript
    from generation.prompts import inference_prompt

    tokenizer = loaded.tokenizer
    prefix = tokenizer(inference_prompt(synthetic_transcript(lines=120)) + "\n\n")["input_ids"]
    suffixes = [tokenizer(q, add_special_tokens=False)["input_ids"] for q in QUESTIONS]
    assert len({len(s) for s in suffixes}) > 3  # lengths differ: padding matters
    return prefix, suffixes


def stop_early_on(loaded, prefix, suffixes, max_tokens):
    """Make a token the greedy answers emit an end-of-sequence id too, so that
    some answers stop early (at different steps) and others at max_tokens."""
    from llm.hf import shared_prefix_generate

    plain = shared_prefix_generate(loaded, prefix, suffixes, max_tokens=max_tokens).outputs
    counts: dict[int, int] = {}
    for output in plain:
        for token in set(output[1:]):
            counts[token] = counts.get(token, 0) + 1
    # a token in some answers but not all
    token = next(t for t, n in sorted(counts.items(), key=lambda c: -c[1]) if n < len(plain))
    loaded.model.generation_config.eos_token_id = [loaded.tokenizer.eos_token_id, token]


@pytest.mark.parametrize("layout", ["packed", "padded"])
def test_batched_greedy_tokens_equal_one_at_a_time(fresh, layout):
    from llm.hf import shared_prefix_generate

    prefix, suffixes = prompt_parts(fresh)
    stop_early_on(fresh, prefix, suffixes, max_tokens=10)
    one_by_one = shared_prefix_generate(fresh, prefix, suffixes, max_tokens=10)
    lengths = [len(o) for o in one_by_one.outputs]
    assert len({tuple(o) for o in one_by_one.outputs}) == len(QUESTIONS)  # all differ
    assert "stop" in one_by_one.finish_reasons and "length" in one_by_one.finish_reasons
    assert len(set(lengths)) > 1

    calls = []
    real_forward = fresh.model.forward

    def counting(*args, **kwargs):
        calls.append(1)
        return real_forward(*args, **kwargs)

    fresh.model.forward = counting
    reported = []
    batched = shared_prefix_generate(
        fresh,
        prefix,
        suffixes,
        max_tokens=10,
        max_batch_size=8,
        layout=layout,
        on_answer=lambda i, new, finish: reported.append((i, list(new), finish, len(calls))),
    )
    assert batched.outputs == one_by_one.outputs
    assert batched.finish_reasons == one_by_one.finish_reasons
    assert batched.batch_sizes == [len(QUESTIONS)]
    # the prefix once, then each question's own tokens once
    assert batched.prefill_tokens == len(prefix) + sum(map(len, suffixes))
    # each answer is reported when it is done: the short ones while others decode
    assert sorted(i for i, *_ in reported) == list(range(len(QUESTIONS)))
    assert all(batched.outputs[i] == new for i, new, _, _ in reported)
    at = {i: step for i, _, _, step in reported}
    shortest = min(range(len(lengths)), key=lengths.__getitem__)
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    assert at[shortest] < at[longest]


def test_batched_sampling_with_a_seed_matches_one_at_a_time(fresh):
    """Each prompt draws from its own generator seeded with the run's seed:
    what it samples does not depend on the prompts decoded beside it."""
    from llm.hf import shared_prefix_generate

    prefix, suffixes = prompt_parts(fresh)
    options = {"seed": 2023, "temperature": 0.8, "top_p": 0.9, "top_k": 40}
    options["repetition_penalty"] = 1.1
    one_by_one = shared_prefix_generate(fresh, prefix, suffixes, max_tokens=8, **options)
    together = shared_prefix_generate(
        fresh, prefix, suffixes, max_tokens=8, max_batch_size=8, **options
    )
    alone_last = shared_prefix_generate(
        fresh, prefix, suffixes[-2:], max_tokens=8, max_batch_size=8, **options
    )
    assert together.outputs == one_by_one.outputs
    assert alone_last.outputs == one_by_one.outputs[-2:]
    greedy = shared_prefix_generate(fresh, prefix, suffixes, max_tokens=8)
    assert together.outputs != greedy.outputs  # it did sample


@pytest.mark.parametrize("carry", [True, False])
def test_conversations_side_by_side_equal_one_at_a_time(fresh, carry):
    from llm.hf import BatchedDecoding, Conversation, ConversationBatch

    tokenizer = fresh.tokenizer
    conversations = [
        [
            "(PERSON1) Hi. (PERSON2) We need three annotators.\nQ: Who spoke first?",
            " A: unsure.\nQ: How many annotators?",
            " A: three.\nQ: Anything else?",
        ],
        [
            "(PERSON3) The deadline is Friday and the budget is small, as we said last "
            "time in the long meeting about the corpus.\nQ: When?",
            " A: Friday.\nQ: Budget?",
        ],
        [
            "(PERSON4) Short.\nQ: Anything?",
            " A: no.\nQ: Really nothing at all about the schedule of the next meeting?",
            " A: nothing.\nQ: Sure?",
        ],
    ]

    def ids(text, turn):
        return tokenizer(text, add_special_tokens=turn == 0)["input_ids"]

    expected, prefill = [], 0
    for turns in conversations:
        conversation = Conversation(fresh, carry=carry)
        expected.append(
            [conversation.turn(ids(t, n), max_tokens=7)[0] for n, t in enumerate(turns)]
        )
        prefill += conversation.prefill_tokens

    batch = ConversationBatch(fresh, len(conversations), carry=carry)
    decoding = BatchedDecoding(fresh, max_tokens=7)
    got: list[list] = [[] for _ in conversations]
    active = list(range(len(conversations)))
    turn = 0
    while active:
        batch.turn(
            [ids(conversations[c][turn], turn) for c in active],
            decoding,
            lambda row, new, finish, rows=tuple(active): got[rows[row]].append(new),
        )
        turn += 1
        going_on = [row for row, c in enumerate(active) if turn < len(conversations[c])]
        batch.keep(going_on)  # the second conversation ends after two turns
        active = [active[row] for row in going_on]
    assert got == expected
    assert len({tuple(answers[0]) for answers in got}) == len(conversations)
    assert batch.prefill_tokens == prefill


def test_a_conversation_started_again_in_a_batch(fresh):
    """A row whose prompt no longer extends its last one starts again: its
    earlier keys are masked, the other rows carry on."""
    from llm.hf import BatchedDecoding, Conversation, ConversationBatch

    tokenizer = fresh.tokenizer
    first = ["(PERSON1) Hi there.\nQ: Who?", " A: one.\nQ: Two?"]
    second = ["(PERSON2) The budget.\nQ: How much?", "(PERSON2) Other text.\nQ: What now?"]
    expected = []
    for turns, again in ((first, False), (second, True)):
        outputs = []
        conversation = Conversation(fresh)
        for n, text in enumerate(turns):
            if n and again:
                conversation = Conversation(fresh)
            start = n == 0 or again
            outputs.append(
                conversation.turn(
                    tokenizer(text, add_special_tokens=start)["input_ids"], max_tokens=6
                )[0]
            )
        expected.append(outputs)
    batch = ConversationBatch(fresh, 2)
    decoding = BatchedDecoding(fresh, max_tokens=6)
    got: list[list] = [[], []]
    for n in range(2):
        batch.turn(
            [
                tokenizer(first[n], add_special_tokens=n == 0)["input_ids"],
                tokenizer(second[n], add_special_tokens=True)["input_ids"],
            ],
            decoding,
            lambda row, new, finish: got[row].append(new),
            restart=[False, n > 0],
        )
    assert got == expected


def test_kv_bytes_and_the_batch_plan(fresh):
    from llm.hf import MEMORY_HEADROOM, kv_bytes_per_token, plan_batch_size

    # the tiny Llama: 2 layers, 4 key/value heads of 64 / 4 = 16 dimensions, a key
    # and a value, 4 bytes each in float32
    assert kv_bytes_per_token(fresh.model) == 2 * 4 * 16 * 2 * 4 == 1024
    assert MEMORY_HEADROOM == 0.85
    # 0.85 x 10,000 = 8,500 bytes; less 1,500 shared = 7,000; rows of 2,000: 3
    assert plan_batch_size(free_bytes=10_000, shared_bytes=1_500, row_bytes=2_000, cap=16) == 3
    assert plan_batch_size(free_bytes=10_000, shared_bytes=1_500, row_bytes=2_000, cap=2) == 2
    # not even one row fits: one is tried all the same (and halving names its prompt)
    assert plan_batch_size(free_bytes=1_000, shared_bytes=1_500, row_bytes=2_000, cap=16) == 1


def test_the_batch_follows_the_free_memory(fresh, monkeypatch):
    from llm import hf

    prefix, suffixes = prompt_parts(fresh)
    decoding = hf.BatchedDecoding(fresh, max_tokens=10)
    monkeypatch.setattr(hf.decoding, "free_memory_bytes", lambda device: 10**12)
    assert decoding.batch_size(shared_tokens=3000, row_tokens=30, query_tokens=20, cap=5) == 5
    # the packed layout's row: 30 tokens of its own cache (1,024 bytes each), its
    # share of a layer copied per step (2 x 512 x 30), its 20 mask rows over the
    # 3,000 shared tokens (4 bytes each) and two float32 copies of its logits
    vocabulary = fresh.model.config.vocab_size
    row = 1024 * 30 + 2 * 512 * 30 + 20 * 3000 * 4 + 2 * 4 * vocabulary
    shared = 2 * 512 * 3000
    free = int((shared + 3 * row + row // 2) / 0.85) + 1
    monkeypatch.setattr(hf.decoding, "free_memory_bytes", lambda device: free)
    assert decoding.batch_size(shared_tokens=3000, row_tokens=30, query_tokens=20, cap=16) == 3


def out_of_memory_above(loaded, query_tokens):
    """The model's forward runs out of memory (torch.OutOfMemoryError, as CUDA
    raises it) when a call over an existing cache computes more than
    `query_tokens` tokens at once; it records the sizes it was called with."""
    import torch

    real_forward = loaded.model.forward
    sizes = []

    def forward(*args, **kwargs):
        cache = kwargs.get("past_key_values")
        size = (kwargs["input_ids"] if "input_ids" in kwargs else args[0]).numel()
        if cache is not None and cache.get_seq_length() > 0:
            sizes.append(size)
            if size > query_tokens:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_forward(*args, **kwargs)

    loaded.model.forward = forward
    return sizes


def test_out_of_memory_halves_the_batch_and_goes_on(fresh):
    from llm.hf import shared_prefix_generate

    prefix, suffixes = prompt_parts(fresh)
    one_by_one = shared_prefix_generate(fresh, prefix, suffixes, max_tokens=6)
    assert [len(s) for s in suffixes] == [11, 34, 8, 4, 42]
    out_of_memory_above(fresh, 42)  # the longest question alone fits, no two beside it
    reported = []
    batched = shared_prefix_generate(
        fresh,
        prefix,
        suffixes,
        max_tokens=6,
        max_batch_size=8,
        on_answer=lambda i, new, finish: reported.append(i),
    )
    # 5 at once (99 tokens) fails, 2 (11 + 34) fails, then one at a time: a
    # halved size is kept for the rest
    assert batched.batch_sizes == [5, 2, 1, 1, 1, 1, 1]
    assert batched.outputs == one_by_one.outputs
    assert len({tuple(o) for o in batched.outputs}) == len(QUESTIONS)
    assert sorted(reported) == list(range(len(QUESTIONS)))  # each once


def test_out_of_memory_with_one_prompt_names_it(fresh):
    from llm.hf import PromptOutOfMemory, shared_prefix_generate

    prefix, suffixes = prompt_parts(fresh)
    out_of_memory_above(fresh, min(map(len, suffixes)) - 1)  # not even one question fits
    with pytest.raises(PromptOutOfMemory) as caught:
        shared_prefix_generate(fresh, prefix, suffixes, max_tokens=6, max_batch_size=4)
    assert caught.value.prompt_tokens == len(prefix) + len(suffixes[0])
    assert "CUDA out of memory" in str(caught.value)


# --- through generation runs -----------------------------------------------------------------


def local_system(path, name, **settings):
    from generation.models import System

    config = {
        "backend": "hf",
        "model_path": str(path),
        "dtype": "float32",
        "chat_template": "llama-2",
        "max_new_tokens": 6,
        **settings,
    }
    return System.objects.create(name=name, model_name="tiny-llama", backend="hf", config=config)


def qa_and_conv():
    from corpus.models import Dataset

    return (
        Dataset.objects.get(version="qa", language="en", split="test2"),
        Dataset.objects.get(version="conv", language="en", split="test2"),
    )


def answers(run):
    return dict(Response.objects.filter(run=run).values_list("question_id", "text"))


@pytest.mark.django_db
def test_batched_runs_equal_one_at_a_time_runs(two_meetings, tiny_model):
    qa, conv = qa_and_conv()
    for mode, data in (("st", qa), ("mt", conv)):
        texts = []
        for size in (1, 16):
            system = local_system(tiny_model, f"tiny-{mode}-{size}", max_batch_size=size)
            # a seed per size, so that the ledger does not answer the second run
            # (the seed changes nothing in greedy decoding)
            run = run_generation(create_generation_run(system, data, mode, seed=size).pk)
            assert (run.status, run.done) == ("done", 12)
            texts.append(answers(run))
        assert texts[0] == texts[1]


@pytest.mark.django_db
def test_a_run_halves_its_batches_when_memory_runs_out(two_meetings, tiny_model):
    from llm.hf import HFModelSpec, load_model

    qa, _ = qa_and_conv()
    plain = run_generation(
        create_generation_run(
            local_system(tiny_model, "one", max_batch_size=1), qa, "st", seed=1
        ).pk
    )
    loaded = load_model(HFModelSpec(str(tiny_model), dtype="float32"))  # the runner's
    real_forward = loaded.model.forward
    try:
        sizes = out_of_memory_above(loaded, 40)  # about two questions' tokens at once
        run = run_generation(
            create_generation_run(local_system(tiny_model, "halving"), qa, "st", seed=2).pk
        )
    finally:
        loaded.model.forward = real_forward
    assert (run.status, run.done) == ("done", 12)
    assert answers(run) == answers(plain)
    assert max(sizes) > 40 and any(size <= 40 for size in sizes)


@pytest.mark.django_db
def test_a_run_stops_naming_the_prompt_that_does_not_fit_alone(two_meetings, tiny_model):
    from llm.hf import HFModelSpec, load_model

    qa, conv = qa_and_conv()
    loaded = load_model(HFModelSpec(str(tiny_model), dtype="float32"))
    real_forward = loaded.model.forward
    try:
        out_of_memory_above(loaded, 0)
        single = run_generation(create_generation_run(local_system(tiny_model, "s"), qa, "st").pk)
        # multi-turn: the first turns have no cache yet; the second ones fail
        multi = run_generation(create_generation_run(local_system(tiny_model, "m"), conv, "mt").pk)
    finally:
        loaded.model.forward = real_forward
    for run in (single, multi):
        assert run.status == "failed"
        assert "Out of memory on the GPU generating for a prompt of" in run.message
        tokens = int(run.message.split("for a prompt of ")[1].split()[0])
        assert tokens > 100  # a whole prompt: the transcript and the question
        assert "then resume" in run.message
    assert Response.objects.filter(run=single).count() == 0
    assert Response.objects.filter(run=multi).count() == 0  # no step over a cache fits


def crash_and_resume(tiny_model, mode, data):
    from llm import hf

    reference = run_generation(
        create_generation_run(local_system(tiny_model, f"ref-{mode}"), data, mode, seed=1).pk
    )
    system = local_system(tiny_model, f"crash-{mode}", max_batch_size=4)
    run = create_generation_run(system, data, mode, seed=2)  # not answered by the ledger
    loaded = hf.load_model(hf.HFModelSpec(str(tiny_model), dtype="float32"))
    real_forward = loaded.model.forward
    calls = []

    def dying(*args, **kwargs):
        calls.append(1)
        if len(calls) == 20:  # part-way through the meetings
            raise RuntimeError("the worker died")
        return real_forward(*args, **kwargs)

    loaded.model.forward = dying
    try:
        with pytest.raises(RuntimeError, match="worker died"):
            run_generation(run.pk)
    finally:
        loaded.model.forward = real_forward
    kept = answers(run)
    assert 0 < len(kept) < 12  # stored as they were made
    GenerationRun.objects.filter(pk=run.pk).update(status="running")
    asked = []
    real_generate = hf.shared_prefix_generate
    real_turn = hf.ConversationBatch.turn

    def counting_generate(loaded, prefix, suffixes, **kwargs):
        asked.extend(suffixes)
        return real_generate(loaded, prefix, suffixes, **kwargs)

    def counting_turn(self, new_ids, *args, **kwargs):
        asked.extend(new_ids)
        return real_turn(self, new_ids, *args, **kwargs)

    hf.shared_prefix_generate, hf.ConversationBatch.turn = counting_generate, counting_turn
    try:
        run = run_generation(run.pk)
    finally:
        hf.shared_prefix_generate, hf.ConversationBatch.turn = real_generate, real_turn
    assert (run.status, run.done) == ("done", 12)
    assert len(asked) == 12 - len(kept)  # only the missing ones
    assert answers(run) == answers(reference)


@pytest.mark.django_db
def test_a_crashed_batched_run_resumes_with_the_missing_answers_only(two_meetings, tiny_model):
    qa, conv = qa_and_conv()
    crash_and_resume(tiny_model, "st", qa)
    crash_and_resume(tiny_model, "mt", conv)
