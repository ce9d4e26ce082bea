from django.contrib import admin
from django.contrib.auth.views import LogoutView
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import APIRootView, DefaultRouter

from adaptive.api.views import AdaptiveStudyViewSet
from analysis.api.views import report_api, select_items_api
from analysis.length_views import length_report_page
from analysis.views import benchmark_report_page, report_page, report_plot, select_items_page
from annotator.api.views import ParticipantViewSet, StudyViewSet
from console.views.home import start_page
from corpus.api.views import DatasetViewSet, DocumentViewSet, QuestionViewSet
from generation.api.views import GenerationRunViewSet, ResponseViewSet, SystemViewSet
from judging.api.views import (
    EvaluatorViewSet,
    JudgeItemViewSet,
    JudgingRunViewSet,
    JudgmentViewSet,
)
from users.api.views import ProjectViewSet
from users.oidc.views import LoginView
from webhooks.api.views import WebhookEndpointViewSet


class ConcordAPIRoot(APIRootView):
    """Concord's REST API: benchmarks (datasets, documents, questions), systems,
    generation runs and their responses, evaluators, judgments, judging runs and
    their items, human studies and their participants. Researchers and admins
    only (a session, or `Authorization: Token <key>`). The OpenAPI schema is at
    /api/schema/, browsable documentation at /api/docs/; every error answers
    `{"detail", "code"}` with its HTTP status."""


class ConcordRouter(DefaultRouter):
    APIRootView = ConcordAPIRoot


router = ConcordRouter()
router.register("datasets", DatasetViewSet)
router.register("documents", DocumentViewSet)
router.register("questions", QuestionViewSet)
router.register("systems", SystemViewSet)
router.register("runs", GenerationRunViewSet)
router.register("responses", ResponseViewSet)
router.register("evaluators", EvaluatorViewSet)
router.register("judgments", JudgmentViewSet)
router.register("judging-runs", JudgingRunViewSet)
router.register("judge-items", JudgeItemViewSet)
router.register("studies", StudyViewSet, basename="study")
router.register("participants", ParticipantViewSet)
router.register("adaptive-studies", AdaptiveStudyViewSet, basename="adaptive-study")
router.register("projects", ProjectViewSet, basename="project")
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")

# Under /api/, a URL no route matches answers JSON like every other API error.
handler400 = "core.api.bad_request"
handler404 = "core.api.not_found"
handler500 = "core.api.server_error"

admin.site.site_header = "Concord"
admin.site.site_title = "Concord"
admin.site.index_title = "Meta-evaluation studies of long-context LLMs"
# "View site" leads to the researcher console.
admin.site.site_url = "/console/"

urlpatterns = [
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", LogoutView.as_view(), name="logout"),
    # sign-in with the lab's identity provider (every page 404 while it is off)
    path("oidc/", include("users.oidc.urls")),
    path("", start_page, name="start"),
    path("console/", include("console.urls")),
    path("favicon.ico", RedirectView.as_view(url=static("favicon.ico"), permanent=True)),
    path("admin/", admin.site.urls),
    path("", include("annotator.urls")),
    path("api/reports/agreement/", report_api, name="api-agreement-report"),
    path("api/reports/select-items/", select_items_api, name="api-select-items"),
    path("api/", include(router.urls)),
    path("analysis/report/", report_page, name="analysis-report"),
    re_path(
        r"^analysis/report/plot/(?P<name>[a-z_]+)\.(?P<fmt>png|svg)$",
        report_plot,
        name="analysis-report-plot",
    ),
    path("analysis/select-items/", select_items_page, name="analysis-select-items"),
    path(
        "analysis/benchmark/<slug:slug>/", benchmark_report_page, name="analysis-benchmark-report"
    ),
    path(
        "analysis/benchmark/<slug:slug>/length/",
        length_report_page,
        name="analysis-benchmark-length",
    ),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
]
