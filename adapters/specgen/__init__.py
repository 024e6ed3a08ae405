"""The generators of ``specs/``: state diagrams, the event schema and the
conformance vectors (``python -m planfold.adapters.specgen.diagrams specs``).
"""
