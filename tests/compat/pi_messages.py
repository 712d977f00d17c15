"""Messages as pi 1.6 writes them (pi-ai's types: `@earendil-works/pi-ai/dist/types.d.ts`), for
the pi tests of the compatibility suite, and the steps of its harness that use them.

Every message carries its own `timestamp` (milliseconds), as pi's do; the entries' ISO
timestamps are made by whichever SessionManager writes them.
"""

from __future__ import annotations

import base64
from typing import Any

#: A 1x1 PNG (67 bytes): an image small enough that no writer externalizes it.
SMALL_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
    )
).decode()
#: Image data whose base64 is 4,096 characters (sessiontree externalizes from 1,024).
LARGE_PNG = base64.b64encode(bytes(range(256)) * 12).decode()

_ts = [1_764_000_000_000]


def ts() -> int:
    """The next message timestamp (one second after the previous one)."""
    _ts[0] += 1000
    return _ts[0]


def usage(total: int = 30) -> dict[str, Any]:
    return {
        "input": total - 10,
        "output": 10,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003},
    }


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts()}


def user_blocks(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks), "timestamp": ts()}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def image(data: str = SMALL_PNG) -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": "image/png"}


def assistant(
    *content: dict[str, Any] | str,
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    stop: str = "stop",
    error: str | None = None,
) -> dict[str, Any]:
    blocks = [text(c) if isinstance(c, str) else c for c in content]
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": blocks,
        "api": "anthropic-messages" if provider == "anthropic" else "openai-responses",
        "provider": provider,
        "model": model,
        "usage": usage(),
        "stopReason": stop,
    }
    if error is not None:
        msg["errorMessage"] = error
    msg["timestamp"] = ts()
    return msg


def thinking(t: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": t, "thinkingSignature": "sig-" + t[:8]}


def tool_call(call_id: str, name: str = "read", **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args or {"path": "src/a.py"}}


def tool_result(
    call_id: str, *content: dict[str, Any] | str, name: str = "read", error: bool = False
) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [text(c) if isinstance(c, str) else c for c in content] or [text("ok")],
        "isError": error,
        "timestamp": ts(),
    }


def system(
    content: str = "",
    sections: dict[str, str | None] | None = None,
    tools_added: list[dict[str, Any]] | None = None,
    tools_removed: list[str] | None = None,
) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "system", "content": content}
    if sections is not None:
        msg["sections"] = sections
    if tools_added is not None:
        msg["toolsAdded"] = tools_added
    if tools_removed is not None:
        msg["toolsRemoved"] = [{"name": n} for n in tools_removed]
    msg["timestamp"] = ts()
    return msg


def tool_decl(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }


def bash_execution(command: str, output: str, exit_code: int | None = 0, **extra: Any) -> dict[str, Any]:
    return {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": exit_code,
        "cancelled": False,
        "truncated": False,
        **extra,
        "timestamp": ts(),
    }


def custom(custom_type: str, content: Any, display: bool = True, details: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "role": "custom",
        "customType": custom_type,
        "content": content,
        "display": display,
    }
    if details is not None:
        msg["details"] = details
    msg["timestamp"] = ts()
    return msg


# --- harness steps (tests/compat/pi/harness.mjs) -----------------------------------------


def msg(message: dict[str, Any]) -> dict[str, Any]:
    return {"op": "message", "message": message}


def step(n: int) -> dict[str, int]:
    """The id step `n` produced."""
    return {"$step": n}


def conversation(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    """User/assistant message steps, one pair per (question, answer)."""
    out: list[dict[str, Any]] = []
    for q, a in pairs:
        out += [msg(user(q)), msg(assistant(a))]
    return out
