from config.celery import app
from judging.importing import run_import_job


@app.task(name="judging.run_benchmark_import", acks_late=True)
def run_benchmark_import(job_id: int) -> str:
    """Run a BenchmarkImport queued from the admin (default queue)."""
    return run_import_job(job_id).status


@app.task(name="judging.run_judging", acks_late=True)
def run_judging(run_id: int) -> str:
    """Run a JudgingRun: a metric here; an LLM judge's calls go out from a
    thread pool (on the run's queue: `JudgingRun.queue`). A Batch API run
    polls its batch again later while the batch is not done (the batch id on
    the run survives worker restarts)."""
    from django.conf import settings

    from judging.judging_runs import judge_run
    from judging.model_judging import batch_waiting

    run = judge_run(run_id)
    if batch_waiting(run):
        run_judging.apply_async(
            args=[run_id], queue="llm", countdown=settings.CONCORD_BATCH_POLL_SECONDS
        )
    return run.status
