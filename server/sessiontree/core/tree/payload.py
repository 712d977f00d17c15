"""The provider's replacement history a compaction may carry (one rule for every dialect)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["provider_payload"]


def provider_payload(compaction: Mapping[str, Any]) -> dict[str, Any] | None:
    """The provider's replacement history a compaction carries (which then stands for the
    kept messages), as the ``providerPayload`` of its summary message; None when it has none."""
    preserve = compaction.get("preserveData")
    if not isinstance(preserve, dict):
        return None
    remote = preserve.get("openaiRemoteCompaction")
    if not isinstance(remote, dict):
        return None
    provider = remote.get("provider")
    history = remote.get("replacementHistory")
    if isinstance(provider, str) and provider and isinstance(history, list):
        return {"type": "openaiResponsesHistory", "provider": provider, "items": history}
    return None
