from django.contrib import admin
from django.contrib.auth.views import LoginView, LogoutView
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from analysis.views import report_api, report_page
from annotator.api.views import ParticipantViewSet, StudyViewSet
from corpus.api.views import DatasetViewSet, DocumentViewSet, QuestionViewSet
from generation.api.views import GenerationRunViewSet, ResponseViewSet, SystemViewSet
from judging.api.views import (
    EvaluatorViewSet,
    JudgeItemViewSet,
    JudgingRunViewSet,
    JudgmentViewSet,
)

router = DefaultRouter()
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

# Under /api/, a URL no route matches answers JSON like every other API error.
handler404 = "config.api.not_found"
handler500 = "config.api.server_error"

admin.site.site_header = "Concord"
admin.site.site_title = "Concord"
admin.site.index_title = "Meta-evaluation studies of long-context LLMs"

urlpatterns = [
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", LogoutView.as_view(), name="logout"),
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
    path("admin/", admin.site.urls),
    path("", include("annotator.urls")),
    path("api/reports/agreement/", report_api, name="api-agreement-report"),
    path("api/", include(router.urls)),
    path("analysis/report/", report_page, name="analysis-report"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
]
