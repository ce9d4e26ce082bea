"""The actions' discipline (annotator.actions): every do_ says which lock it
needs and which check_ takes it (or that it needs none), and every check_ it
names exists."""

import importlib
import inspect
import pkgutil
import re

import annotator.actions

MODULES = [
    importlib.import_module(f"annotator.actions.{info.name}")
    for info in pkgutil.iter_modules(annotator.actions.__path__)
]


def functions(prefix: str) -> dict[str, object]:
    return {
        name: function
        for module in MODULES
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if name.startswith(prefix) and function.__module__ == module.__name__
    }


def test_every_do_names_its_lock_and_the_check_that_takes_it():
    checks = functions("check_")
    wrong = []
    for name, function in functions("do_").items():
        doc = " ".join((function.__doc__ or "").split())
        if "Needs no lock" in doc:
            continue
        named = set(re.findall(r"\bcheck_\w+", doc))
        if "Needs the" not in doc or "lock" not in doc or not named:
            wrong.append(f"{name}: its docstring names no lock and no check_ that takes it")
        wrong += [f"{name} names {n}, which does not exist" for n in sorted(named - set(checks))]
    assert not wrong, "\n".join(wrong)


def test_the_check_finds_a_do_without_its_lock(monkeypatch):
    module = MODULES[0]

    def do_something() -> None:
        """Changes something."""

    do_something.__module__ = module.__name__
    monkeypatch.setattr(module, "do_something", do_something, raising=False)
    assert "do_something" in functions("do_")
    try:
        test_every_do_names_its_lock_and_the_check_that_takes_it()
    except AssertionError as error:
        assert "do_something: its docstring names no lock" in str(error)
    else:
        raise AssertionError("a do_ without its lock went unnoticed")
