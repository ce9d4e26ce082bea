from django.urls import path

from annotator import views

app_name = "annotator"
urlpatterns = [
    path("s/<uuid:public_id>/", views.study_entry, name="study_entry"),
    path("r/<str:token>/", views.resume, name="resume"),
    path("r/<str:token>/item/<int:position>/", views.item_page, name="item"),
    path("r/<str:token>/finish/", views.finish, name="finish"),
    path("r/<str:token>/done/", views.done, name="done"),
    path("gold/", views.gold_home, name="gold_home"),
    path("gold/<int:study_id>/start/", views.gold_start, name="gold_start"),
]
