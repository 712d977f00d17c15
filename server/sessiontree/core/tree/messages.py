"""Converting agent messages into the messages the model receives (docs/tree-view.md "Context and conversion").

`convert_to_llm(messages)` maps every agent message role onto the LLM roles ``user``,
``assistant`` and ``toolResult``:

* ``branchSummary`` / ``compactionSummary`` become user messages (attribution ``agent``)
  whose single text block is `BRANCH_SUMMARY_TEMPLATE` / `COMPACTION_SUMMARY_TEMPLATE`
  with the summary inserted verbatim, then the whole text passed through the reference
  renderer's post-render formatting (`sessiontree.core.tree.prompt_format.format_prompt`:
  trailing whitespace, blank lines before list items and around XML tags, runs of blank
  lines, table rows); a compaction's ``providerPayload`` is copied;
* ``custom`` and the legacy ``hookMessage`` become user messages (string content wrapped
  as one text block, attribution as stored);
* ``bashExecution`` becomes ``Ran `cmd```, a newline, then the output in a ``` fence or
  ``(no output)``, then ``\\n\\n(command cancelled)`` or ``\\n\\nCommand exited with code N``;
  ``pythonExecution`` becomes ``Ran Python:`` + a ```python fence of the code + a newline +
  ``Output:`` + a fence of the output (or ``(no output)``), then
  ``\\n\\n(execution cancelled)`` or ``\\n\\nExecution failed with code N``; both are skipped
  when ``excludeFromContext`` is set and carry attribution ``user``. (The reference also
  appends an output-truncation notice built from a ``meta`` object; sessions written by
  the reference keep that notice inside ``output``, so nothing is added here.)
* ``fileMention`` becomes ``<system-reminder>\\n`` + each file as
  ``<file path="P">\\nCONTENT\\n</file>`` (``<file path="P">\\n</file>`` when the content
  is empty) joined by blank lines + ``\\n</system-reminder>``, followed by the files'
  image blocks, attribution ``user``;
* ``user`` gets attribution ``user`` and ``developer``/``toolResult`` ``agent`` when they
  have none; a pruned toolResult (``prunedAt`` set) keeps only its joined text, or
  ``[Output truncated]``;
* unknown roles are dropped.

Then tool calls and results are paired again (results moved right after their assistant
message, missing ones replaced by a synthetic error result reading
`INTERRUPTED_TOOL_RESULT_TEXT`), and consecutive user messages made only of text blocks
are merged into one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from sessiontree.core.format.jscompat import js_get, js_string
from sessiontree.core.tree.prompt_format import format_prompt

__all__ = [
    "BRANCH_SUMMARY_TEMPLATE",
    "COMPACTION_SUMMARY_TEMPLATE",
    "INTERRUPTED_TOOL_RESULT_TEXT",
    "bash_execution_to_text",
    "branch_summary_text",
    "compaction_summary_text",
    "convert_to_llm",
    "file_mention_text",
    "python_execution_to_text",
]

BRANCH_SUMMARY_TEMPLATE = (
    "The following is a summary of a branch that this conversation came back from:\n\n"
    "<summary>\n{summary}\n</summary>"
)
COMPACTION_SUMMARY_TEMPLATE = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by "
    "that language model. You **MUST** use this to build on the work that has already been "
    "done and **MUST NOT** duplicate work. Here is the summary produced by the other "
    "language model; you **MUST** use the information in this summary to assist with your "
    "own analysis:\n\n<summary>\n{summary}\n</summary>"
)
INTERRUPTED_TOOL_RESULT_TEXT = "Tool execution was interrupted (session recovery)."


def _render(template: str, summary: Any) -> str:
    # The reference renders with Handlebars (noEscape): a missing value renders empty, any
    # other is inserted verbatim; then its renderer formats the whole text.
    return format_prompt(template.replace("{summary}", "" if summary is None else js_string(summary)))


def branch_summary_text(summary: Any) -> str:
    """The text block of a converted ``branchSummary`` message."""
    return _render(BRANCH_SUMMARY_TEMPLATE, summary)


def compaction_summary_text(summary: Any) -> str:
    """The text block of a converted ``compactionSummary`` message."""
    return _render(COMPACTION_SUMMARY_TEMPLATE, summary)


def _nonzero_exit(code: Any) -> bool:
    return code is not None and not (
        isinstance(code, int | float) and not isinstance(code, bool) and code == 0
    )


def bash_execution_to_text(msg: dict[str, Any]) -> str:
    """The user text of a ``bashExecution`` message."""
    text = f"Ran `{js_string(js_get(msg, 'command'))}`\n"
    output = msg.get("output")
    text += f"```\n{js_string(output)}\n```" if output else "(no output)"
    if msg.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif _nonzero_exit(msg.get("exitCode")):
        text += f"\n\nCommand exited with code {js_string(msg.get('exitCode'))}"
    return text


def python_execution_to_text(msg: dict[str, Any]) -> str:
    """The user text of a ``pythonExecution`` message."""
    text = f"Ran Python:\n```python\n{js_string(js_get(msg, 'code'))}\n```\n"
    output = msg.get("output")
    text += f"Output:\n```\n{js_string(output)}\n```" if output else "(no output)"
    if msg.get("cancelled"):
        text += "\n\n(execution cancelled)"
    elif _nonzero_exit(msg.get("exitCode")):
        text += f"\n\nExecution failed with code {js_string(msg.get('exitCode'))}"
    return text


def file_mention_text(files: Iterable[dict[str, Any]]) -> str:
    """The ``<system-reminder>`` text of a ``fileMention`` message."""
    parts = []
    for f in files:
        content = f.get("content")
        inner = f"\n{js_string(content)}\n" if content else "\n"
        parts.append(f'<file path="{js_string(js_get(f, "path"))}">{inner}</file>')
    return "<system-reminder>\n" + "\n\n".join(parts) + "\n</system-reminder>"


def _with_default_attribution(m: dict[str, Any], default: str) -> dict[str, Any]:
    out = dict(m)
    if out.get("attribution") is None:
        out["attribution"] = default
    return out


def _pruned_content(m: dict[str, Any]) -> Any:
    content = m.get("content")
    if m.get("prunedAt") is None:
        return content
    blocks = content if isinstance(content, list) else []
    text = "".join(
        js_string(js_get(b, "text")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )
    return [{"type": "text", "text": text or "[Output truncated]"}]


def _convert_one(m: Any) -> dict[str, Any] | None:
    if not isinstance(m, dict):
        return None
    role = m.get("role")
    if role == "bashExecution":
        if m.get("excludeFromContext"):
            return None
        return {
            "role": "user",
            "content": [{"type": "text", "text": bash_execution_to_text(m)}],
            "attribution": "user",
            "timestamp": m.get("timestamp"),
        }
    if role == "pythonExecution":
        if m.get("excludeFromContext"):
            return None
        return {
            "role": "user",
            "content": [{"type": "text", "text": python_execution_to_text(m)}],
            "attribution": "user",
            "timestamp": m.get("timestamp"),
        }
    if role in ("custom", "hookMessage"):
        content = m.get("content")
        out: dict[str, Any] = {
            "role": "user",
            "content": [{"type": "text", "text": content}] if isinstance(content, str) else content,
        }
        if "attribution" in m:
            out["attribution"] = m["attribution"]
        out["timestamp"] = m.get("timestamp")
        return out
    if role == "branchSummary":
        return {
            "role": "user",
            "content": [{"type": "text", "text": branch_summary_text(m.get("summary"))}],
            "attribution": "agent",
            "timestamp": m.get("timestamp"),
        }
    if role == "compactionSummary":
        out = {
            "role": "user",
            "content": [{"type": "text", "text": compaction_summary_text(m.get("summary"))}],
            "attribution": "agent",
        }
        if m.get("providerPayload") is not None:
            out["providerPayload"] = m["providerPayload"]
        out["timestamp"] = m.get("timestamp")
        return out
    if role == "fileMention":
        files = [f for f in (m.get("files") or []) if isinstance(f, dict)]
        content_blocks: list[Any] = [{"type": "text", "text": file_mention_text(files)}]
        content_blocks.extend(f["image"] for f in files if f.get("image"))
        return {
            "role": "user",
            "content": content_blocks,
            "attribution": "user",
            "timestamp": m.get("timestamp"),
        }
    if role == "user":
        return _with_default_attribution(m, "user")
    if role == "developer":
        return _with_default_attribution(m, "agent")
    if role == "assistant":
        return m
    if role == "toolResult":
        out = dict(m)
        out["content"] = _pruned_content(m)
        if out.get("attribution") is None:
            out["attribution"] = "agent"
        return out
    return None


def _tool_calls(m: dict[str, Any]) -> list[dict[str, Any]]:
    if m.get("role") != "assistant":
        return []
    content = m.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"]


def _synthetic_result(call_id: Any, calls: list[dict[str, Any]], now_ms: Callable[[], int]) -> dict[str, Any]:
    name = next((c.get("name") for c in calls if c.get("id") == call_id), None)
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name if name is not None else "unknown",
        "content": [{"type": "text", "text": INTERRUPTED_TOOL_RESULT_TEXT}],
        "isError": True,
        "timestamp": now_ms(),
    }


def _repair_tool_result_order(
    messages: list[dict[str, Any]], now_ms: Callable[[], int]
) -> list[dict[str, Any]]:
    """Put every assistant's tool results right after it (reference ``repairToolResultOrdering``)."""
    results_by_call: dict[Any, int] = {}
    for i, m in enumerate(messages):
        if m.get("role") == "toolResult":
            results_by_call[m.get("toolCallId")] = i
    consumed: set[int] = set()
    result: list[dict[str, Any]] = []
    repaired = False
    i = 0
    n = len(messages)
    while i < n:
        msg = messages[i]
        if msg.get("role") == "toolResult" and i in consumed:
            i += 1
            continue
        result.append(msg)
        calls = _tool_calls(msg)
        if not calls:
            i += 1
            continue
        required: dict[Any, None] = dict.fromkeys(c.get("id") for c in calls)
        displaced: list[dict[str, Any]] = []
        j = i + 1
        while j < n and required:
            nxt = messages[j]
            if nxt.get("role") == "toolResult" and nxt.get("toolCallId") in required:
                result.append(nxt)
                consumed.add(j)
                del required[nxt.get("toolCallId")]
                if displaced:
                    repaired = True
                j += 1
                continue
            displaced.append(nxt)
            consumed.add(j)
            j += 1
        i = j
        for call_id in required:
            found = results_by_call.get(call_id)
            if found is not None and found not in consumed:
                result.append(messages[found])
                consumed.add(found)
            else:
                result.append(_synthetic_result(call_id, calls, now_ms))
            repaired = True
        result.extend(displaced)

    # Second pass: an assistant with tool calls that was itself displaced was pushed
    # without its results being resolved.
    remove: set[int] = set()
    insertions: dict[int, list[dict[str, Any]]] = {}
    for i, msg in enumerate(result):
        calls = _tool_calls(msg)
        if not calls:
            continue
        expected: dict[Any, None] = dict.fromkeys(c.get("id") for c in calls)
        j = i + 1
        while j < len(result) and result[j].get("role") == "toolResult":
            expected.pop(result[j].get("toolCallId"), None)
            j += 1
        if not expected:
            continue
        to_insert: list[dict[str, Any]] = []
        for call_id in expected:
            later = next(
                (
                    k
                    for k in range(j + 1, len(result))
                    if k not in remove
                    and result[k].get("role") == "toolResult"
                    and result[k].get("toolCallId") == call_id
                ),
                -1,
            )
            if later != -1:
                to_insert.append(result[later])
                remove.add(later)
            else:
                to_insert.append(_synthetic_result(call_id, calls, now_ms))
        if to_insert:
            insertions[i] = to_insert
            repaired = True
    if insertions or remove:
        rebuilt: list[dict[str, Any]] = []
        for i, msg in enumerate(result):
            if i not in remove:
                rebuilt.append(msg)
            rebuilt.extend(insertions.get(i, ()))
        result = rebuilt
    return result if repaired else messages


def _text_only(m: dict[str, Any]) -> bool:
    content = m.get("content")
    return (
        m.get("role") == "user"
        and isinstance(content, list)
        and all(isinstance(c, dict) and c.get("type") == "text" for c in content)
    )


def _merge_user_text(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if len(messages) < 2:
        return messages
    out = [messages[0]]
    for cur in messages[1:]:
        prev = out[-1]
        if _text_only(prev) and _text_only(cur):
            merged = dict(prev)
            merged["content"] = [*prev["content"], *cur["content"]]
            out[-1] = merged
        else:
            out.append(cur)
    return out


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def convert_to_llm(
    messages: Iterable[Any], *, now_ms: Callable[[], int] | None = None
) -> list[dict[str, Any]]:
    """Convert agent messages to LLM messages exactly like the reference ``convertToLlm``.

    ``now_ms`` stamps the synthetic results of interrupted tool calls (default: the wall
    clock), so callers and tests can make the output deterministic.
    """
    converted = [c for c in (_convert_one(m) for m in messages) if c is not None]
    repaired = _repair_tool_result_order(converted, now_ms or _wall_ms)
    return _merge_user_text(repaired)
