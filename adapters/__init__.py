"""planfold's imperative shell: codec, storage, model clients, runtime and CLI."""
