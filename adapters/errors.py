"""The adapters' error family.

``AdapterError`` is the root of every error the imperative shell raises on
purpose: storage, model clients, codecs, the runtime's workspace. It sits
beside ``KernelError`` under ``PlanfoldError``, so a caller can tell "the
kernel refused a decision" from "the shell around it failed" by class alone.
Each error carries a stable kebab-case ``code``.
"""

from __future__ import annotations

from ..kernel.errors import PlanfoldError

__all__ = ["AdapterError"]


class AdapterError(PlanfoldError):
    """Root of the adapters' errors (storage, model, codec, runtime I/O)."""

    code = "adapter-error"
