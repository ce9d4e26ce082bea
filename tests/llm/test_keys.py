"""API keys go only where the operator lent them (llm.keys): a researcher's
judge or system configuration cannot make a worker send its secrets to a
server of the researcher's choosing."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from corpus.models import Dataset
from generation.models import GenerationRun, Response, System
from judging.judging_runs import JudgingError, create_judging_run
from judging.model_judging import run_llm_judging
from judging.models import Evaluator, JudgingRun
from llm.config import ModelConfig
from llm.keys import KeyBindingError, key_for, lent_keys, sends_key_to
from llm.providers import OpenAICompatibleModel
from tests.fakes.openai_server import FakeOpenAI
from users.models import Membership, Project, User


def test_without_the_setting_only_openai_gets_the_openai_key(monkeypatch):
    monkeypatch.delenv("CONCORD_LLM_KEYS", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-lab")
    assert lent_keys() == {"OPENAI_API_KEY": frozenset({"api.openai.com"})}
    assert key_for("OPENAI_API_KEY", "https://api.openai.com/v1") == "sk-lab"
    assert key_for("OPENAI_API_KEY", "https://API.OpenAI.com:443/v1") == "sk-lab"
    for elsewhere in (
        "https://api.openai.com.evil.example/v1",  # a longer name
        "https://api.openai.com@evil.example/v1",  # user info before the host
        "https://evil.example/api.openai.com/v1",
        "https://api.openai.com:8443/v1",  # another port than the scheme's
        "http://127.0.0.1:8000/v1",
        "https://api.openai.com:notaport/v1",
        "",
    ):
        assert key_for("OPENAI_API_KEY", elsewhere) == "", elsewhere
    monkeypatch.setenv("DJANGO_SECRET_KEY", "the-secret")
    assert key_for("DJANGO_SECRET_KEY", "https://api.openai.com/v1") == ""  # never lent


def test_keys_are_lent_by_name_to_hosts_and_ports(monkeypatch):
    monkeypatch.setenv(
        "CONCORD_LLM_KEYS",
        " VLLM_TOKEN = vllm.internal:8000 , [::1]:9000 ; OPENAI_API_KEY=api.openai.com",
    )
    assert sends_key_to("VLLM_TOKEN", "http://vllm.internal:8000/v1")
    assert not sends_key_to("VLLM_TOKEN", "http://vllm.internal:8001/v1")
    assert not sends_key_to("VLLM_TOKEN", "http://vllm.internal/v1")
    assert sends_key_to("VLLM_TOKEN", "http://[::1]:9000/v1")
    assert not sends_key_to("OPENAI_API_KEY", "http://vllm.internal:8000/v1")
    for bad, words in (
        ("OPENAI_API_KEY", "is not NAME=host"),
        ("lower=api.openai.com", "is not NAME=host"),
        ("KEY=", "is not NAME=host"),
        ("KEY=http://x.example/", "is not a host or host:port"),
    ):
        with pytest.raises(KeyBindingError, match=words):
            lent_keys(bad)


def test_a_provider_sends_a_key_only_to_its_hosts(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-lab")
    monkeypatch.setenv("CONCORD_LLM_KEYS", "OPENAI_API_KEY=api.openai.com")
    local = OpenAICompatibleModel(ModelConfig(base_url="http://127.0.0.1:8000/v1", model="m"))
    assert local.key == "not-needed"
    hosted = OpenAICompatibleModel(ModelConfig(base_url="https://api.openai.com/v1", model="m"))
    assert hosted.key == "sk-lab"


class Capturing(FakeOpenAI):
    """The fake server, noting the Authorization header of every request."""

    def handle(self, request):
        self.seen.append(request.headers.get("Authorization"))
        super().handle(request)


@pytest.fixture
def outsider_with_a_response(transactional_db, tmp_path):
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=1), with_responses=True)
    other = Project.objects.create(name="Other team", slug="other")
    mallory = User.objects.create_user("mallory", password="pw-m-12345", role="researcher")
    mallory.memberships.all().delete()
    Membership.objects.create(project=other, user=mallory, role="researcher")
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    system = System.objects.create(name="m-sys", model_name="m", backend="imported", project=other)
    run = GenerationRun.objects.create(
        project=other, system=system, dataset=dataset, mode="st", origin="imported"
    )
    question = dataset.question_texts.values_list("question_id", flat=True)[0]
    Response.objects.create(run=run, question_id=question, text="x")
    api = APIClient()
    api.force_login(mallory)
    return api, dataset


def judge_through_the_api(api, dataset, name: str, config: dict) -> None:
    """Create the judge and a run of it as the researcher does, then do the
    run's work as the llm worker does."""
    made = api.post(
        "/api/evaluators/", {"name": name, "kind": "llm_rubric", "config": config}, format="json"
    )
    assert made.status_code == 201, made.content
    started = api.post(
        "/api/judging-runs/",
        {"evaluator": name, "dataset": dataset.pk, "mode": "st"},
        format="json",
    )
    assert started.status_code == 201, started.content
    run_llm_judging(JudgingRun.objects.get(pk=started.json()["id"]).pk)


def judge_config(url: str, key_name: str) -> dict:
    return {
        "base_url": url,
        "model": "m",
        "server": "vllm",
        "api_key_env": key_name,
        "seeds": [1],
        "max_retries": 0,
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_celery")
def test_a_judge_naming_a_worker_secret_is_refused_and_never_sends_it(
    outsider_with_a_response, monkeypatch
):
    api, dataset = outsider_with_a_response
    monkeypatch.setenv("DJANGO_SECRET_KEY", "the-real-django-secret-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-labs-openai-key")
    monkeypatch.delenv("CONCORD_LLM_KEYS", raising=False)
    with Capturing() as server:
        server.seen = []
        made = api.post(
            "/api/evaluators/",
            {
                "name": "innocent judge",
                "kind": "llm_rubric",
                "config": judge_config(server.url, "DJANGO_SECRET_KEY"),
            },
            format="json",
        )
        assert made.status_code == 400
        assert "api_key_env 'DJANGO_SECRET_KEY'" in made.content.decode()
        assert "CONCORD_LLM_KEYS" in made.content.decode()
        assert not Evaluator.objects.filter(name="innocent judge").exists()
        # the lab's OpenAI key may be named, and goes only to OpenAI: this server gets none
        judge_through_the_api(
            api, dataset, "innocent judge", judge_config(server.url, "OPENAI_API_KEY")
        )
        assert server.seen and set(server.seen) == {"Bearer not-needed"}
        # a configuration stored before keys were lent (or written in the database) is
        # refused when a run would use it, and its provider would send no key anyway
        evaluator = Evaluator.objects.get(name="innocent judge")
        config = judge_config(server.url, "DJANGO_SECRET_KEY")
        Evaluator.objects.filter(pk=evaluator.pk).update(config=config)
        with pytest.raises(JudgingError, match="api_key_env 'DJANGO_SECRET_KEY'"):
            create_judging_run(Evaluator.objects.get(pk=evaluator.pk), dataset, "st")
        provider = OpenAICompatibleModel(
            ModelConfig(**{k: config[k] for k in ("base_url", "model", "api_key_env")})
        )
        assert provider.key == "not-needed"
        assert "Bearer the-real-django-secret-key" not in server.seen


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_celery")
def test_a_key_lent_to_a_lab_server_reaches_it(outsider_with_a_response, monkeypatch):
    api, dataset = outsider_with_a_response
    monkeypatch.setenv("VLLM_TOKEN", "lab-vllm-token")
    with Capturing() as server:
        server.seen = []
        host = server.url.split("//", 1)[1].split("/", 1)[0]
        monkeypatch.setenv("CONCORD_LLM_KEYS", f"VLLM_TOKEN={host}")
        judge_through_the_api(api, dataset, "lab judge", judge_config(server.url, "VLLM_TOKEN"))
        assert server.seen and set(server.seen) == {"Bearer lab-vllm-token"}


def test_with_a_host_list_a_configuration_calls_only_those_servers(monkeypatch):
    from llm.keys import allowed_hosts
    from llm.providers import ProviderSetupError

    monkeypatch.delenv("CONCORD_LLM_HOSTS", raising=False)
    assert allowed_hosts() is None  # unset: any server (a single team's install)
    ModelConfig(base_url="http://10.0.0.5:8000/v1", model="m").check_endpoint(ValueError)
    monkeypatch.setenv("CONCORD_LLM_HOSTS", "vllm.internal:8000, gpu2.internal")
    monkeypatch.setenv("CONCORD_LLM_KEYS", "OPENAI_API_KEY=api.openai.com")
    for allowed in (
        "http://vllm.internal:8000/v1",
        "http://gpu2.internal/v1",
        "https://api.openai.com/v1",  # a lent key's host
    ):
        ModelConfig(base_url=allowed, model="m").check_endpoint(ValueError)
    for refused in (
        "http://169.254.169.254/latest/",  # the cloud's metadata service
        "http://db.internal:5432/",
        "http://vllm.internal:8001/v1",
        "http://gpu2.internal:8080/v1",
    ):
        with pytest.raises(ValueError, match="CONCORD_LLM_HOSTS"):
            ModelConfig(base_url=refused, model="m").check_endpoint(ValueError)
        # and a configuration that got past the check (stored before) is not called
        with pytest.raises(ProviderSetupError, match="this install calls only"):
            OpenAICompatibleModel(ModelConfig(base_url=refused, model="m"))
    with pytest.raises(KeyBindingError, match="is not a host"):
        allowed_hosts("http://x/")
