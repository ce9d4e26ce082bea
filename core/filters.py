"""The API's list filters answer a value they cannot take with 400 and say
which filter, never with an empty list (a typo must not read as "no data").

django-filter already refuses a bad choice, number or id; its boolean filter
reads anything it does not know as "no filter". `FilterSet` here is the base
of every FilterSet of the apps and of those django-filter builds from a view's
`filterset_fields` (`FilterBackend`, REST_FRAMEWORK's filter backend): the
same filters, with booleans that refuse what is not true or false.
Filters over a field with choices but declared by hand (a related field's
`run__mode`) are `choice(...)` filters, so the schema lists the choices.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.rest_framework.filterset import FILTER_FOR_DBFIELD_DEFAULTS

from core.scoping import scope_choices

TRUE = ("true", "1")
FALSE = ("false", "0")


class StrictBooleanField(forms.Field):
    """true / false (or 1 / 0, any case); anything else refused (empty: by the FilterSet)."""

    def to_python(self, value: object) -> bool | None:
        if value is None or isinstance(value, bool):
            return value
        if value == "":
            return None
        text = str(value).strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
        raise ValidationError(
            "%(value)s is not true or false.", code="invalid", params={"value": value}
        )


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.TextInput)  # hands the raw text to the field
        super().__init__(*args, **kwargs)


# What an id column holds (a bigint): SQLite cannot even compare with more
# (OverflowError, a 500), PostgreSQL refuses it.
BIGINT = 2**63


class BoundedModelChoiceField(django_filters.fields.ModelChoiceField):
    """A related object's id: a whole number beyond a bigint is refused like
    any id that names nothing."""

    def to_python(self, value: object) -> object:
        if value not in self.empty_values:
            try:
                number = int(str(value).strip())
            except ValueError:
                number = None
            if number is not None and not -BIGINT <= number < BIGINT:
                raise ValidationError(
                    self.error_messages["invalid_choice"],
                    code="invalid_choice",
                    params={"value": value},
                )
        return super().to_python(value)


class BoundedModelChoiceFilter(django_filters.ModelChoiceFilter):
    """Another project's object is refused like one that does not exist (a 400
    for one and an empty list for the other would tell that it exists)."""

    field_class = BoundedModelChoiceField

    def get_queryset(self, request: Any) -> models.QuerySet:
        queryset = super().get_queryset(request)
        return queryset if request is None else scope_choices(queryset, request.user)


class IdFilter(django_filters.NumberFilter):
    """A whole number: an id of 0.5 names nothing and is refused (a decimal
    NumberFilter would read it and answer an empty list)."""

    field_class = forms.IntegerField


def object_id(field_name: str, **kwargs: object) -> django_filters.NumberFilter:
    """A filter on a related object's id given by hand (`texts__dataset`): a
    whole number; one beyond a bigint is a 400, not a query that overflows."""
    return IdFilter(field_name=field_name, min_value=-BIGINT, max_value=BIGINT - 1, **kwargs)


def choice(field_name: str, choices, **kwargs) -> django_filters.ChoiceFilter:
    """A filter over a related field with choices (`run__mode`): a value that is not
    one of them is a 400 listing them."""
    return django_filters.ChoiceFilter(field_name=field_name, choices=choices, **kwargs)


DEFAULTS = deepcopy(FILTER_FOR_DBFIELD_DEFAULTS)
DEFAULTS[models.BooleanField] = {"filter_class": StrictBooleanFilter}
DEFAULTS[models.NullBooleanField] = {"filter_class": StrictBooleanFilter}


class WholeNumberFilter(IdFilter):
    """A filter over an integer column (`seed`): 0.5 is refused, not matched to nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", -BIGINT)
        kwargs.setdefault("max_value", BIGINT - 1)
        super().__init__(*args, **kwargs)


for whole in (
    models.AutoField,
    models.BigAutoField,
    models.IntegerField,
    models.BigIntegerField,
    models.SmallIntegerField,
    models.PositiveIntegerField,
    models.PositiveSmallIntegerField,
    models.PositiveBigIntegerField,
):
    DEFAULTS[whole] = {"filter_class": WholeNumberFilter}
for related in (models.ForeignKey, models.OneToOneField):
    DEFAULTS[related] = {**DEFAULTS[related], "filter_class": BoundedModelChoiceFilter}


class FilterSet(django_filters.rest_framework.FilterSet):
    """Every filter refuses what it cannot take, and an empty value too: `?status=`
    is a client that meant a value and sent none (reading it as "no filter"
    would answer every row as if filtered)."""

    FILTER_DEFAULTS = DEFAULTS

    def get_form_class(self) -> type[forms.Form]:
        base = super().get_form_class()

        def clean(form: forms.Form) -> dict[str, Any]:
            cleaned = base.clean(form)
            data = form.data
            for name in form.fields:
                if name not in data:
                    continue
                values = data.getlist(name) if hasattr(data, "getlist") else [data[name]]
                if all(not str(value).strip() for value in values):
                    form.add_error(name, "Empty: give a value, or leave the filter out.")
            return cleaned

        return type(base.__name__, (base,), {"clean": clean})


class FilterBackend(DjangoFilterBackend):
    filterset_base = FilterSet
