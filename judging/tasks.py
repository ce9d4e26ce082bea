from config.celery import app
from judging.importing import run_import_job


@app.task(name="judging.run_benchmark_import", acks_late=True)
def run_benchmark_import(job_id: int) -> str:
    """Run a BenchmarkImport queued from the admin (default queue)."""
    return run_import_job(job_id).status


@app.task(name="judging.run_judging", acks_late=True)
def run_judging(run_id: int) -> str:
    """Run a JudgingRun: metrics here; an LLM judge's calls go out from a thread
    pool (on the run's queue: `JudgingRun.queue`)."""
    from judging.llm.executor import run_llm_judging
    from judging.models import Evaluator, JudgingRun
    from judging.runs import run_metric_judging

    kind, use_batch = JudgingRun.objects.values_list("evaluator__kind", "use_batch").get(pk=run_id)
    if kind == Evaluator.Kind.METRIC:
        return run_metric_judging(run_id).status
    if use_batch:
        from django.conf import settings

        from judging.llm.batch import run_llm_batch
        from llm.batch import WAITING

        run = run_llm_batch(run_id)
        if run.batch_id and run.batch_status in WAITING:
            # poll again later; the batch id on the run survives worker restarts
            run_judging.apply_async(
                args=[run_id], queue="llm", countdown=settings.CONCORD_BATCH_POLL_SECONDS
            )
        return run.status
    return run_llm_judging(run_id).status
