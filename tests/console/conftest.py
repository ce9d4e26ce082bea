from tests.annotator.conftest import crowd_study  # noqa: F401 (fixture)
from tests.console.test_imports_browser import team_researcher  # noqa: F401 (fixture)
