from django.urls import path

from console import views

app_name = "console"
urlpatterns = [
    path("", views.home, name="home"),
    path("runs/", views.runs, name="runs"),
    path("runs/judging/new/", views.judging_run_new, name="judging_run_new"),
    path("runs/generation/new/", views.generation_run_new, name="generation_run_new"),
    path("runs/<str:kind>/<int:pk>/", views.run_detail, name="run"),
    path("runs/<str:kind>/<int:pk>/live/", views.run_live, name="run_live"),
    path("runs/<str:kind>/<int:pk>/<str:action>/", views.run_action, name="run_action"),
    path("studies/new/", views.study_new, name="study_new"),
    path("studies/<int:pk>/", views.study_detail, name="study"),
    path("studies/<int:pk>/live/", views.study_live, name="study_live"),
    path("studies/<int:pk>/refill/", views.study_refill, name="study_refill"),
    path("studies/<int:pk>/status/<str:action>/", views.study_status, name="study_status"),
    path("participants/<int:pk>/exclude/", views.participant_exclude, name="exclude"),
    path("participants/<int:pk>/reinstate/", views.participant_reinstate, name="reinstate"),
    path(
        "participants/<int:pk>/allow-other-device/",
        views.participant_allow_other_device,
        name="allow_other_device",
    ),
    path("participants/<int:pk>/plot.svg", views.participant_plot, name="participant_plot"),
    path("workers/", views.workers, name="workers"),
    path("workers/inspect/", views.workers_inspect, name="workers_inspect"),
    path("documents/", views.documents, name="documents"),
    path("documents/<int:pk>/", views.document_detail, name="document"),
]
