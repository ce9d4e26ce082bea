import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class ServerTimingMiddleware:
    """Adds `Server-Timing: app;dur=<ms>`: the time Django spent on the request.

    Browsers show it in their developer tools, and benchmarks/rating_load.py
    reads it to separate server time from queueing and network time."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        response["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
        return response
