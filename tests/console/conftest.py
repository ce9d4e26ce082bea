from tests.annotator.conftest import crowd_study  # noqa: F401 (fixture)
