def storable(text: str) -> str:
    """Model output as the database can keep it: PostgreSQL text cannot hold NUL
    characters, which byte-level models can emit; they become U+FFFD."""
    return text.replace("\x00", "\ufffd") if text else text
