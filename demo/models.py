# Models arrive with the issue that gives this app its job (see docs/architecture.md).
