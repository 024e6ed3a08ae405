"""Model clients: the ``ModelClient`` port, an OpenAI-compatible client and a
scripted client for the offline demo and tests. The adapters of a user's own
``openai`` client live in ``planfold.adapters.llm.openai_sdk`` (the
``openai`` extra), imported by that name only, so that this package never
needs the ``openai`` package.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import model, openai, scripted
    from .model import *
    from .openai import *
    from .scripted import *

    __all__ = [*model.__all__, *openai.__all__, *scripted.__all__]
else:
    from .._lazy import lazy_modules

    __getattr__, __dir__ = lazy_modules(__name__, globals(), ("model", "openai", "scripted"))
