"""Steps take what they use (issue 10, finding 4): no function in :mod:`worker.steps` takes the whole
:class:`worker.context.RenderContext`; they see :class:`~worker.context.RenderReport`,
:class:`~worker.context.ProviderCalls` or :class:`~worker.context.ArtefactCache`, and settings as
keyword arguments. The variants (:mod:`worker.variants`) are the orchestration and keep the context."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import worker.steps


def test_no_step_takes_the_render_context() -> None:
    offenders = []
    for info in pkgutil.iter_modules(worker.steps.__path__):
        module = importlib.import_module(f"worker.steps.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__:
                continue
            for param in inspect.signature(fn).parameters.values():
                if "RenderContext" in str(param.annotation):
                    offenders.append(f"{module.__name__}.{name}({param.name})")
    assert offenders == []
