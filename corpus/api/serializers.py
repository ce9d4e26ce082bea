from __future__ import annotations

from rest_framework import serializers

from corpus.models import Benchmark, Dataset, Document, Question, QuestionText


class DatasetSerializer(serializers.ModelSerializer):
    benchmark: serializers.SlugRelatedField[Benchmark] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    question_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Dataset
        fields = ["id", "benchmark", "version", "language", "split", "question_count"]


class DocumentSerializer(serializers.ModelSerializer):
    benchmark: serializers.SlugRelatedField[Benchmark] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    question_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Document
        fields = [
            "id",
            "benchmark",
            "external_id",
            "split",
            "language",
            "word_count",
            "question_count",
        ]


class DocumentDetailSerializer(DocumentSerializer):
    class Meta(DocumentSerializer.Meta):
        fields = [*DocumentSerializer.Meta.fields, "text", "source"]


class QuestionTextSerializer(serializers.ModelSerializer):
    version = serializers.CharField(source="dataset.version", read_only=True)
    language = serializers.CharField(source="dataset.language", read_only=True)

    class Meta:
        model = QuestionText
        fields = [
            "dataset",
            "version",
            "language",
            "text",
            "reference_answer",
            "alternative_answers",
        ]


class QuestionSerializer(serializers.ModelSerializer):
    document = serializers.CharField(source="document.external_id", read_only=True)
    split = serializers.CharField(source="document.split", read_only=True)
    texts = QuestionTextSerializer(many=True, read_only=True)

    class Meta:
        model = Question
        fields = [
            "id",
            "document",
            "split",
            "external_id",
            "order",
            "question_type",
            "answer_position",
            "texts",
        ]
