"""Strictness shared by the API's writable serializers: a body says exactly
what it means, or it is a 400 naming what was wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.db.models import Model, QuerySet
from rest_framework import serializers

from core.scoping import scope_choices

# Sent by the browsable API's HTML forms along with the fields.
IGNORED = {"csrfmiddlewaretoken"}


if TYPE_CHECKING:  # the mixin goes before a Serializer class
    _SerializerBase = serializers.Serializer
else:
    _SerializerBase = object


def scoped_choices(queryset: QuerySet | None, context: Mapping[str, Any]) -> QuerySet | None:
    """A related field's choices for the request's user (users.projects.scope_choices)."""
    request = context.get("request")
    if queryset is None or request is None:
        return queryset
    return scope_choices(queryset, request.user)


class ScopedPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):
    def get_queryset(self) -> QuerySet | None:
        return scoped_choices(super().get_queryset(), self.context)


class KnownFieldsMixin(_SerializerBase):
    """Refuse fields the serializer does not know instead of dropping them
    silently (a misspelt "raw_scale_mn" would otherwise be a 200 that changed
    nothing). Read-only fields may be sent back as they were read.

    A writable serializer's related fields offer only what the request's user
    may name (scoped_choices)."""

    serializer_related_field: type[serializers.RelatedField] = ScopedPrimaryKeyRelatedField

    def to_internal_value(self, data: object) -> dict[str, Any]:
        if isinstance(data, Mapping):
            unknown = sorted(str(k) for k in data if k not in self.fields and k not in IGNORED)
            if unknown:
                errors: dict[str, Any] = {key: "Unknown field." for key in unknown}
                errors["known fields"] = sorted(self.fields)
                raise serializers.ValidationError(errors)
            # a text field takes a text: DRF would store the number 0 as "0" (a
            # reason, a name, a code the sender never wrote as text)
            wrong = {
                name: "A text, not " + type(data[name]).__name__ + "."
                for name, field in self.fields.items()
                if isinstance(field, serializers.CharField)
                and not field.read_only
                and name in data
                and data[name] is not None
                and not isinstance(data[name], str)
            }
            if wrong:
                raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A number, not a boolean (DRF's FloatField takes true for 1.0)."""

    def to_internal_value(self, data: float | int | str) -> float:
        if isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class NameRelatedField(serializers.SlugRelatedField):
    """A related object named by a text field; a name with a NUL character is
    refused here (PostgreSQL cannot even be asked for it)."""

    default_error_messages = {"nul": "A name cannot hold a NUL character (\\u0000)."}

    def to_internal_value(self, data: object) -> Model:
        if isinstance(data, str) and "\x00" in data:
            self.fail("nul")
        return super().to_internal_value(data)

    def get_queryset(self) -> QuerySet | None:
        return scoped_choices(super().get_queryset(), self.context)
