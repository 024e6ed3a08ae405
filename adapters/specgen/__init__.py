"""The generators of ``specs/``: state diagrams, the event schema (made by
``adapters.codec.schema``) and the conformance vectors (``python -m
planfold.adapters.specgen.diagrams specs``).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import vectors
    from .vectors import *

    __all__ = [*vectors.__all__]
else:
    from .._lazy import lazy_modules

    __getattr__, __dir__ = lazy_modules(__name__, globals(), ("vectors",))
