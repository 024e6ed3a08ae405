"""The generators of ``specs/``: state diagrams, the event schema and the
conformance vectors (``python -m planfold.adapters.specgen.diagrams specs``).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import schema, vectors
    from .schema import *
    from .vectors import *

    __all__ = [*schema.__all__, *vectors.__all__]
else:
    from .._lazy import lazy_modules

    __getattr__, __dir__ = lazy_modules(__name__, globals(), ("schema", "vectors"))
