"""``planfold serve``: the correctness core over JSON-RPC 2.0 on stdin/stdout,
for host runtimes written in other languages (protocol types, the host-driven
session, the server, its OpenRPC document, a small Python client).
"""
