"""planfold's adapters: the imperative shell around the kernel.

- ``codec``: msgspec encoding of events, JSON Lines and the JSON Schema of
  payloads (below the stores, which import it);
- ``provenance``: where a forked session came from, and its fork record in
  a JSON Lines export;
- ``store``: the session log on memory, SQLite (the embedded default) and the
  ``SessionLog`` that decides on fresh state and appends;
- ``llm``: the model port, an OpenAI-compatible client and a scripted one;
- ``runtime``: turns, pre-steps, tools, review and the goal service;
- ``otel``: OpenTelemetry traces of a session (the ``otel`` extra; nothing
  imports it unless a program asks for tracing);
- ``cli``: the ``planfold`` command;
- ``specgen``: the generators of ``specs/`` (diagrams, schema, vectors).
"""
