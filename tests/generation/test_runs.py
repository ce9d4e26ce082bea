"""Generation runs with a tiny local Llama and with the fake OpenAI-compatible
server: single-turn and multi-turn, stored as they are made, resumable."""

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset
from generation.config import GenerationConfig, GenerationConfigError
from generation.models import GenerationRun, Response, System
from generation.runner import GenerationError, create_generation_run, run_generation
from tests.conftest import tasks_run_eagerly
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db


def dataset(version="qa"):
    return Dataset.objects.get(version=version, language="en", split="test2")


def local_system(path, name="tiny", **settings):
    config = {
        "backend": "hf",
        "model_path": str(path),
        "dtype": "float32",
        "chat_template": "llama-2",
        "max_new_tokens": 6,
        **settings,
    }
    return System.objects.create(name=name, model_name="tiny-llama", backend="hf", config=config)


def test_configuration_checks():
    with pytest.raises(GenerationConfigError, match="needs model_path"):
        GenerationConfig.from_dict({"backend": "hf"})
    with pytest.raises(GenerationConfigError, match="does not accept repetition_penalty"):
        GenerationConfig.from_dict(
            {
                "backend": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
                "repetition_penalty": 1.1,
            }
        )
    with pytest.raises(GenerationConfigError, match="chat_template"):
        GenerationConfig.from_dict({"backend": "hf", "model_path": "x", "chat_template": "x"})


def test_single_turn_local_run_with_prefix_cache(two_meetings, tiny_model):
    system = local_system(tiny_model)
    run = create_generation_run(system, dataset(), "st", seed=2023)
    assert run.total == 12
    run = run_generation(run.pk)
    assert (run.status, run.done) == ("done", 12)
    response = Response.objects.filter(run=run).first()
    assert response.input_tokens > 100 and 0 < response.output_tokens <= 6
    assert response.finish_reason in ("stop", "length") and response.seconds > 0
    # the cached prefix gives what a plain greedy generation of the full prompt gives
    cached = dict(Response.objects.filter(run=run).values_list("question_id", "text"))
    plain_system = local_system(tiny_model, name="tiny-no-cache", prefix_cache=False)
    # another seed, so that the ledger does not answer it (greedy: the seed changes nothing)
    plain = run_generation(create_generation_run(plain_system, dataset(), "st", seed=2024).pk)
    assert dict(Response.objects.filter(run=plain).values_list("question_id", "text")) == cached


def test_multi_turn_resumes_from_stored_turns(two_meetings, tiny_model):
    system = local_system(tiny_model, name="tiny-mt", chat_template="raw")
    run = create_generation_run(system, dataset("conv"), "mt")
    run_generation(run.pk)
    first = {r.question_id: r.text for r in Response.objects.filter(run=run)}
    # a crash after the third answer of the first meeting: the rest is asked again,
    # the conversation rebuilt from the stored turns
    kept = Response.objects.filter(run=run).order_by(
        "question__document__external_id", "question__order"
    )[:3]
    Response.objects.filter(run=run).exclude(pk__in=[r.pk for r in kept]).delete()
    GenerationRun.objects.filter(pk=run.pk).update(status="running", done=3)
    run = run_generation(run.pk)
    assert run.status == "done" and run.done == 12
    assert {r.question_id: r.text for r in Response.objects.filter(run=run)} == first


def test_conv_needs_multi_turn_and_done_runs_are_not_redone(two_meetings, tiny_model):
    system = local_system(tiny_model, name="tiny-2")
    with pytest.raises(GenerationError, match="use multi-turn mode"):
        create_generation_run(system, dataset("conv"), "st")
    run_generation(create_generation_run(system, dataset(), "st").pk)
    with pytest.raises(GenerationError, match="is done"):
        create_generation_run(system, dataset(), "st")


def test_trimming_when_the_context_is_short(two_meetings, tiny_model):
    system = local_system(tiny_model, name="tiny-short", context_length=400)
    run = run_generation(create_generation_run(system, dataset(), "st").pk)
    response = Response.objects.filter(run=run).first()
    assert response.removed_tokens > 0 and "omitted" in response.trim_notice
    assert response.input_tokens <= 400 - 6


@pytest.mark.django_db(transaction=True)
def test_api_system_single_and_multi_turn(two_meetings_committed):
    with FakeOpenAI() as server:
        system = System.objects.create(
            name="api model",
            model_name="m",
            backend="openai",
            config={
                "backend": "openai",
                "base_url": server.url,
                "model": "m",
                "server": "vllm",
                "max_new_tokens": 64,
                "length_instruction": True,
            },
        )
        run = run_generation(create_generation_run(system, dataset("conv"), "mt", seed=2024).pk)
        assert (run.status, run.done) == ("done", 12)
        assert server.count == 12
        # the two meetings run in parallel; a 6th question sees the five earlier turns
        last = max((r["messages"] for r in server.requests), key=len)
        assert [m["role"] for m in last] == ["system"] + ["user", "assistant"] * 5 + ["user"]
        assert last[-1]["content"].endswith("words.")  # L-Eval length instruction
        assert server.requests[0]["seed"] == 2024 and server.requests[0]["max_tokens"] == 64
        response = Response.objects.filter(run=run).first()
        assert response.length_instruction.startswith("Answer in about")


def test_generate_command(two_meetings, tiny_model, capsys):
    local_system(tiny_model, name="tiny-cmd")
    call_command("generate", "--system", "tiny-cmd", "--split", "test2", "--now")
    assert "12/12 answered (done)" in capsys.readouterr().out
    with pytest.raises(CommandError, match="No system"):
        call_command("generate", "--system", "nope", "--split", "test2")


@pytest.mark.django_db(transaction=True)
def test_nul_characters_are_stored_safely(two_meetings_committed, monkeypatch):
    from generation import remote
    from llm.text import storable

    assert storable("a\x00b") == "a\ufffdb" and storable("") == ""
    original = remote.save_answer
    monkeypatch.setattr(
        remote,
        "save_answer",
        lambda run, question, text, *args, **fields: original(
            run, question, text + "\x00", *args, **fields
        ),
    )
    with FakeOpenAI() as server:
        system = System.objects.create(
            name="nul model",
            model_name="m",
            backend="openai",
            config={"backend": "openai", "base_url": server.url, "model": "m", "server": "vllm"},
        )
        run = run_generation(create_generation_run(system, dataset(), "st").pk)
    assert run.status == "done"
    assert Response.objects.filter(run=run, text__contains="\ufffd").count() == 12


@pytest.mark.django_db(transaction=True)
def test_runs_start_from_the_api_and_the_admin(
    two_meetings_committed,
    researcher,
    client,
    django_user_model,
    django_capture_on_commit_callbacks,
):
    from rest_framework.test import APIClient

    with FakeOpenAI() as server:
        system = System.objects.create(
            name="api model",
            model_name="m",
            backend="openai",
            config={"backend": "openai", "base_url": server.url, "model": "m", "server": "vllm"},
        )
        api = APIClient()
        api.force_login(researcher)
        with tasks_run_eagerly(), django_capture_on_commit_callbacks(execute=True):
            answer = api.post(
                "/api/runs/",
                {"system": "api model", "dataset": dataset().pk, "mode": "st", "seed": 2023},
                format="json",
            )
        assert answer.status_code == 201, answer.json()
        run = GenerationRun.objects.get(pk=answer.json()["id"])
        assert (run.status, run.done, run.seed) == ("done", 12, 2023)
        refused = api.post(
            "/api/runs/",
            {"system": "api model", "dataset": dataset("conv").pk, "mode": "st"},
            format="json",
        )
        assert refused.status_code == 400 and "multi-turn" in refused.json()["detail"]
        admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-123-x")
        client.force_login(admin)
        page = client.post(
            "/admin/generation/system/add/",
            {
                "name": "broken",
                "model_name": "x",
                "backend": "hf",
                "config": "{}",
                "description": "",
            },
        )
        assert "needs model_path" in page.content.decode()
        with django_capture_on_commit_callbacks(execute=False):
            client.post(
                "/admin/generation/generationrun/add/",
                {
                    "system": system.pk,
                    "dataset": dataset().pk,
                    "mode": "st",
                    "seed": "2024",
                    "project": system.project_id,
                },  # fmt: skip
            )
        assert GenerationRun.objects.filter(system=system, seed=2024, status="queued").exists()


def test_multi_turn_cache_carry_matches_full_encoding(two_meetings, tiny_model):
    carried = local_system(tiny_model, name="tiny-mt-carry", chat_template="llama-2")
    full = local_system(
        tiny_model, name="tiny-mt-full", chat_template="llama-2", prefix_cache=False
    )
    texts = []
    # a seed each, so that the ledger does not answer the second (greedy: no change)
    for seed, system in enumerate((carried, full)):
        run = run_generation(create_generation_run(system, dataset("conv"), "mt", seed=seed).pk)
        assert run.status == "done"
        texts.append(dict(Response.objects.filter(run=run).values_list("question_id", "text")))
    assert texts[0] == texts[1]


@pytest.mark.parametrize("rope_type", ["linear", "dynamic", "yarn"])
def test_rope_scaling_reaches_the_target_context(tiny_model, rope_type):
    from generation.local import local_caller

    config = GenerationConfig.from_dict(
        {
            "backend": "hf",
            "model_path": str(tiny_model),
            "dtype": "float32",
            "context_length": 70000,
            "rope_scaling": True,
            "rope_type": rope_type,
        }
    )
    caller = local_caller(config)
    caller.close()
    loaded = caller.model.loaded
    # the tiny model's window is 32768: factor ceil(70000 / 32768) = 3
    parameters = (
        getattr(loaded.model.config, "rope_parameters", None) or loaded.model.config.rope_scaling
    )
    assert parameters["factor"] == 3.0 and parameters["rope_type"] == rope_type
    assert loaded.context_length == 3 * 32768


def test_out_of_memory_stops_the_run_cleanly(two_meetings, tiny_model, monkeypatch):
    from llm import hf

    class OutOfMemoryError(RuntimeError):  # what torch.cuda raises
        pass

    def explode(*args, **kwargs):
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(hf, "shared_prefix_generate", explode)  # the local provider's call
    system = local_system(tiny_model, name="tiny-oom")
    run = run_generation(create_generation_run(system, dataset(), "st").pk)
    assert run.status == "failed" and "Out of memory on the GPU" in run.message
    assert "for a prompt of" in run.message and "then resume" in run.message


def test_every_decoding_option_reaches_generate(two_meetings, tiny_model, monkeypatch):
    """No option is dropped on the way: repetition penalty and top-k included,
    down to the logits processors that the batched decoding has transformers
    build, as generate() builds them."""
    from llm import hf

    seen = []
    real_init = hf.BatchedDecoding.__init__

    def spy(self, loaded, **kwargs):
        real_init(self, loaded, **kwargs)
        seen.append((kwargs, self))

    monkeypatch.setattr(hf.BatchedDecoding, "__init__", spy)
    system = local_system(
        tiny_model,
        name="tiny-options",
        temperature=0.6,
        top_p=0.9,
        top_k=40,
        repetition_penalty=1.1,
    )
    run = run_generation(create_generation_run(system, dataset(), "st", seed=2025).pk)
    assert run.status == "done"
    assert seen and all(
        k["repetition_penalty"] == 1.1
        and k["top_k"] == 40
        and k["top_p"] == 0.9
        and k["temperature"] == 0.6
        and k["seed"] == 2025
        for k, _ in seen
    )
    processors = {type(p).__name__: p for p in seen[0][1].processors}
    assert processors["RepetitionPenaltyLogitsProcessor"].penalty == 1.1
    assert processors["TopKLogitsWarper"].top_k == 40
    assert processors["TopPLogitsWarper"].top_p == 0.9
    assert processors["TemperatureLogitsWarper"].temperature == 0.6
    assert seen[0][1].sample
    options = hf.generation_options(
        hf.load_model(hf.HFModelSpec(str(tiny_model), "float32")).tokenizer, 8, 0.6, 0.9, 40, 1.1
    )
    assert (options["top_k"], options["repetition_penalty"], options["do_sample"]) == (
        40,
        1.1,
        True,
    )
