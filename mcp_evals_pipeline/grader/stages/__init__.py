"""Opt-in ladder stages: each module here registers one Feature (grader/features.py) when imported.

Every module of this package is imported, so adding a stage is adding a file."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
