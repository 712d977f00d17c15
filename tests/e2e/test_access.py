"""Access control (allowedRoots), bad initialization options and the request size limit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e_helpers import World, call, start_client, stop_client
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory, world: World) -> Path:
    """A valid session file outside every allowed root."""
    d = tmp_path_factory.mktemp("outside")
    target = d / "secret.jsonl"
    target.write_bytes(world.small.read_bytes())
    return target


async def denied(client: LanguageClient, method: str, params: dict) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as err:
        await call(client, method, params)
    assert err.value.code == -32005, (method, err.value.code, err.value.message)
    return err.value


async def test_outside_the_roots(client: LanguageClient, world: World, outside: Path) -> None:
    err = await denied(client, "session/open", {"path": str(outside)})
    assert err.data["path"] == str(outside)
    await denied(client, "session/forkFrom", {"sourcePath": str(outside), "cwd": str(world.root)})
    await denied(client, "session/create", {"cwd": str(world.root), "sessionDir": str(outside.parent)})
    await denied(client, "session/recent", {"cwd": str(world.root), "sessionDir": str(outside.parent)})
    await denied(client, "session/doctor", {"path": str(outside)})
    await denied(
        client, "session/open", {"path": str(world.sessions / ".." / ".." / ".." / ".." / outside.name)}
    )


async def test_symlink_escape(client: LanguageClient, world: World, outside: Path) -> None:
    link = world.sessions / f"link-{client.kind}.jsonl"  # type: ignore[attr-defined]
    link.symlink_to(outside)
    err = await denied(client, "session/open", {"path": str(link)})
    assert "symlink" in err.message
    # a symlink that stays inside a root is fine
    inner = world.copy(f"inner-{client.kind}.jsonl")  # type: ignore[attr-defined]
    ok_link = world.sessions / f"ok-link-{client.kind}.jsonl"  # type: ignore[attr-defined]
    ok_link.symlink_to(inner)
    res = await call(client, "session/open", {"path": str(ok_link)})
    assert res["path"] == str(inner.resolve())


async def test_directory_fifo_and_relative(client: LanguageClient, world: World) -> None:
    d = world.sessions / f"dir-{client.kind}.jsonl"  # type: ignore[attr-defined]
    d.mkdir()
    err = await denied(client, "session/open", {"path": str(d)})
    assert "directory" in err.message
    fifo = world.sessions / f"fifo-{client.kind}.jsonl"  # type: ignore[attr-defined]
    os.mkfifo(fifo)
    err = await denied(client, "session/open", {"path": str(fifo)})
    assert "regular file" in err.message
    await denied(client, "session/open", {"path": "relative/session.jsonl"})
    res = await call(client, "session/openInMemory", {})
    assert res["session"]


async def test_explicit_allowed_roots_and_request_limit(world: World) -> None:
    only = world.root / "only"
    only.mkdir(exist_ok=True)
    inside = only / "s.jsonl"
    inside.write_bytes(world.small.read_bytes())
    c = await start_client(world, "neovim@v0.11", allowedRoots=[str(only)], limits={"maxRequestBytes": 4096})
    try:
        assert (await call(c, "session/open", {"path": str(inside)}))["session"]
        await denied(c, "session/open", {"path": str(world.copy("not-in-only.jsonl"))})
        # the request size limit of the same options
        with pytest.raises(JsonRpcException) as err:
            await call(c, "session/openInMemory", {"cwd": "/" + "x" * 10000})
        assert err.value.code == -32600 and "maxRequestBytes" in err.value.message
        assert (await call(c, "session/openInMemory", {}))["session"]
    finally:
        await stop_client(c)


async def test_bad_options_warn_and_use_defaults(world: World) -> None:
    c = await start_client(
        world, "visual-studio-code", watch="yes", logLevel=5, allowedRoots="", limits=[1], summarizerCommand=3
    )
    try:
        await c.wait_until_idle() if hasattr(c, "wait_until_idle") else None
        texts = [m.message for m in c.messages]
        for name in ("watch", "logLevel", "limits", "summarizerCommand"):
            assert any(name in t for t in texts), (name, texts)
        path = world.copy("after-bad-options.jsonl")
        assert (await call(c, "session/open", {"path": str(path)}))["entryCount"] > 0
    finally:
        await stop_client(c)
