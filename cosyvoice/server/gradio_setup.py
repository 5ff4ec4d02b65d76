"""How this app imports gradio: without gradio's type-stub upkeep.

When gradio defines each of its ~80 component classes, ``gradio.component_meta`` reads the
class's source file, parses it, and compares (or writes) a ``.pyi`` stub beside it in
site-packages: type hints for gradio's own developers, nothing a running app uses. It was
1.2–1.7 of the 2.7–3.3 CPU-s of ``import gradio`` at every app start (gradio 6.31, 2 Zen 4
cores, ``import torch`` first). :func:`skip_stub_upkeep` makes that step a no-op as
``gradio.component_meta`` loads, by an import hook that removes itself after that one
module; a gradio without the step imports as before.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

MODULE = "gradio.component_meta"
STEP = "create_or_modify_pyi"


def _no_stub(*_args, **_kwargs) -> None:
    """What gradio's stub upkeep does here: nothing."""


class _SkipStubUpkeep(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)  # once: the real finders find the module
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module) -> None:
            run(module)
            if hasattr(module, STEP):
                setattr(module, STEP, _no_stub)

        spec.loader.exec_module = exec_module
        return spec


def skip_stub_upkeep() -> None:
    """Install the hook, unless gradio's components are imported already (or it is)."""
    if MODULE in sys.modules or any(isinstance(f, _SkipStubUpkeep) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _SkipStubUpkeep())
