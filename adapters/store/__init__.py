"""The session log's storage: one ``Store`` protocol, memory and SQLite backends,
the projection and snapshot, and ``SessionLog`` (decide on fresh state, append).
"""
