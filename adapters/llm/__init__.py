"""Model clients: the ``ModelClient`` port, an OpenAI-compatible client and a
scripted client for the offline demo and tests.
"""
