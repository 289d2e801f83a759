"""Two rich modules that typer's help imports and rk never uses, loaded on first use.

`typer.rich_utils` (imported for every `--help` and usage error) imports
`rich.markdown` (markdown-it) for `rich_markup_mode="markdown"` and
`rich.traceback` (pygments) for pretty exceptions. rk uses neither: its help is
rich markup, and its failures are its own one-line errors. The two imports are
most of what a `--help` waits for, so each module is stood in by one whose class
loads the real module when it is first called, or when any other name of it is
asked for: what is printed is the same (tests/test_startup.py).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

#: module → the one name `typer.rich_utils` takes from it at import.
DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


def defer() -> None:
    """Stand in for each module not imported yet (an imported one is left as it is)."""
    for module, name in DEFERRED.items():
        if module not in sys.modules:
            sys.modules[module] = _stand_in(module, name)


def _stand_in(module: str, name: str) -> ModuleType:
    stub = ModuleType(module, f"Stands in for {module} until it is used (rk.cli.rich_deferred).")

    def real() -> ModuleType:
        if sys.modules.get(module) is stub:
            del sys.modules[module]
        return importlib.import_module(module)

    class Deferred:
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return getattr(real(), name)(*args, **kwargs)

        @classmethod
        def from_exception(cls, *args: Any, **kwargs: Any) -> Any:  # Traceback's constructor typer calls
            return getattr(real(), name).from_exception(*args, **kwargs)

    Deferred.__name__ = Deferred.__qualname__ = name
    setattr(stub, name, Deferred)

    def __getattr__(attr: str) -> Any:  # PEP 562: any other name loads the module
        if attr.startswith("__"):  # the import system's own questions (`__path__`) are not a use
            raise AttributeError(attr)
        return getattr(real(), attr)

    stub.__getattr__ = __getattr__  # type: ignore[method-assign]
    return stub
