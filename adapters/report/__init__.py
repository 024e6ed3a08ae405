"""``planfold report``: a session (or a whole database) as one self-contained
HTML page for auditors: ``build_report`` folds a log into a ``Report``
(``Coverage`` adds up many; ``events`` embeds every event), ``render_report``
and ``render_coverage`` make the page with the diagrams Graphviz laid out
when the package was built (``diagram``)."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import diagram, events, html, model
    from .diagram import *
    from .events import *
    from .html import *
    from .model import *

    __all__ = [*model.__all__, *events.__all__, *diagram.__all__, *html.__all__]
else:
    from .._lazy import lazy_modules

    __getattr__, __dir__ = lazy_modules(__name__, globals(), ("model", "events", "diagram", "html"))
