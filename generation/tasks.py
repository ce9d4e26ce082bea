from config.celery import app
from generation.runner import run_generation


@app.task(name="generation.run_generation", acks_late=True)
def run_generation_task(run_id: int) -> str:
    """Run a generation run (queue gpu for local models, llm for API models)."""
    return run_generation(run_id).status
