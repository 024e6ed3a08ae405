"""Fuzz targets for every entry point that takes outside input, their
regression corpus, and the time-boxed fuzz pass (``python -m tests.fuzz``)."""
