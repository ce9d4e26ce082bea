from core.errors import ErrorCode, Invalid


class ImportFailure(Invalid):
    """Input that cannot be imported. The message names the file and the problem,
    and says what to do where that is not obvious. Raising it inside an import
    rolls the whole import back."""

    code = ErrorCode.IMPORT_FAILED
