"""The ``planfold`` command: demo, replay, audit, export, import, conform."""
