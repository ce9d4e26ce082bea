from django.urls import path

from annotator import views
from core.not_found import friendly_not_found, link_not_found

# People open these links by hand (pasted from Prolific, typed from a note): a
# wrong one answers the product's 404 page, never Django's technical one, even
# with DEBUG on (core.not_found).
app_name = "annotator"
urlpatterns = [
    path("s/<uuid:public_id>/", friendly_not_found(views.study_entry), name="study_entry"),
    # a study link whose id is no UUID at all (cut short, mistyped)
    path("s/<str:public_id>/", link_not_found),
    path("r/<str:token>/", friendly_not_found(views.resume), name="resume"),
    path("r/<str:token>/item/<int:position>/", friendly_not_found(views.item_page), name="item"),
    path("r/<str:token>/finish/", friendly_not_found(views.finish), name="finish"),
    path("r/<str:token>/done/", friendly_not_found(views.done), name="done"),
    path("gold/", views.gold_home, name="gold_home"),
    path("gold/<int:study_id>/start/", friendly_not_found(views.gold_start), name="gold_start"),
]
