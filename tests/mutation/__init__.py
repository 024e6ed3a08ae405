"""Mutation testing of ``kernel/`` with mutmut: ``python -m tests.mutation``
runs it and prints the score, killed / all non-equivalent mutants, where the
equivalent mutants are the ones listed with a reason in ``equivalent/*.toml``."""
