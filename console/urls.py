from django.urls import path

from console.views import adaptive, documents, home, prolific, runs, studies

app_name = "console"
urlpatterns = [
    path("", home.home, name="home"),
    path("runs/", runs.runs, name="runs"),
    path("runs/judging/new/", runs.judging_run_new, name="judging_run_new"),
    path("runs/generation/new/", runs.generation_run_new, name="generation_run_new"),
    path("runs/generation/import/", runs.responses_upload, name="responses_upload"),
    path("runs/<str:kind>/<int:pk>/", runs.run_detail, name="run"),
    path("runs/<str:kind>/<int:pk>/live/", runs.run_live, name="run_live"),
    path("runs/<str:kind>/<int:pk>/<str:action>/", runs.run_action, name="run_action"),
    path("studies/new/", studies.study_new, name="study_new"),
    path("studies/<int:pk>/", studies.study_detail, name="study"),
    path("studies/<int:pk>/live/", studies.study_live, name="study_live"),
    path("studies/<int:pk>/refill/", studies.study_refill, name="study_refill"),
    path("studies/<int:pk>/status/<str:action>/", studies.study_status, name="study_status"),
    path("studies/<int:pk>/bonus/", prolific.study_bonus, name="study_bonus"),
    path("studies/<int:pk>/message/", prolific.study_message, name="study_message"),
    path("bonuses/<int:pk>/pay/", prolific.study_bonus_pay, name="bonus_pay"),
    path("bonuses/<int:pk>/settle/", prolific.study_bonus_settle, name="bonus_settle"),
    path("participants/<int:pk>/exclude/", studies.participant_exclude, name="exclude"),
    path("participants/<int:pk>/reinstate/", studies.participant_reinstate, name="reinstate"),
    path(
        "participants/<int:pk>/allow-other-device/",
        studies.participant_allow_other_device,
        name="allow_other_device",
    ),
    path("participants/<int:pk>/plot.svg", studies.participant_plot, name="participant_plot"),
    path("adaptive/", adaptive.adaptive_list, name="adaptive_list"),
    path("adaptive/new/", adaptive.adaptive_new, name="adaptive_new"),
    path("adaptive/<int:pk>/", adaptive.adaptive_detail, name="adaptive"),
    path("adaptive/<int:pk>/plot.svg", adaptive.adaptive_plot, name="adaptive_plot"),
    path("adaptive/<int:pk>/<str:action>/", adaptive.adaptive_action, name="adaptive_action"),
    path("workers/", runs.workers, name="workers"),
    path("workers/inspect/", runs.workers_inspect, name="workers_inspect"),
    path("documents/", documents.documents, name="documents"),
    path("documents/<int:pk>/", documents.document_detail, name="document"),
]
