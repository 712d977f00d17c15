-- The sidebar in a real terminal: Neovim inside tmux, screen captured with capture-pane.
local H = require("helpers")

local function tmux(sock, args)
  local argv = { "tmux", "-L", sock, "-f", "/dev/null" }
  vim.list_extend(argv, args)
  return vim.system(argv, { text = true }):wait()
end

describe("a real terminal", function()
  it("draws the sidebar (tmux capture saved to test-artifacts/nvim-sidebar.txt)", function()
    assert.are.equal(1, vim.fn.executable("tmux"), "tmux is not installed (scripts/setup-system.sh)")
    H.teardown()
    local dir = H.tmpdir()
    vim.fn.mkdir(dir .. "/agent", "p")
    local path = H.fixture("branched.jsonl", dir)
    local sock = "sessiontree-nvim-test-" .. vim.fn.getpid()
    local cmd = table.concat({
      "cd " .. vim.fn.shellescape(dir) .. " &&",
      "SESSIONTREE_SERVER=" .. vim.fn.shellescape(H.server),
      "SESSIONTREE_TEST_AGENT_DIR=" .. vim.fn.shellescape(dir .. "/agent"),
      vim.fn.shellescape(vim.v.progpath),
      "-u " .. vim.fn.shellescape(H.plugin_root .. "/tests/minimal_init.lua"),
      "-i NONE -n",
      vim.fn.shellescape("+SessionTree open " .. path),
    }, " ")
    local started = tmux(sock, { "new-session", "-d", "-x", "110", "-y", "16", cmd })
    assert.are.equal(0, started.code, started.stderr)
    local screen = ""
    local ok = vim.wait(15000, function()
      local r = tmux(sock, { "capture-pane", "-p", "-t", "0" })
      screen = r.stdout or ""
      return screen:find("Tests added in tests/test_cli.py.", 1, true) ~= nil
    end, 100)
    local colored = tmux(sock, { "capture-pane", "-p", "-e", "-t", "0" }).stdout or ""
    tmux(sock, { "kill-server" })
    local artifacts = H.repo_root .. "/test-artifacts"
    vim.fn.mkdir(artifacts, "p")
    vim.fn.writefile(vim.split(screen, "\n", { plain = true }), artifacts .. "/nvim-sidebar.txt")
    vim.fn.writefile(vim.split(colored, "\n", { plain = true }), artifacts .. "/nvim-sidebar.ansi")
    assert.is_true(ok, "the sidebar never showed up; screen:\n" .. screen)
    local lines = vim.split(screen, "\n", { plain = true })
    local function shown(expected)
      for _, l in ipairs(lines) do
        if l:sub(1, #expected) == expected then
          return true
        end
      end
      return false
    end
    for _, expected in ipairs({
      "• [start] user: Add a --verbose flag to the CLI",
      "├─ • user: Document it in the README instead",
      "│     • ▶ leaf assistant: README updated.",
      "└─ user: Now write tests for it",
    }) do
      assert.is_true(shown(expected), "not on screen: " .. expected .. "\n" .. screen)
    end
    assert.is_nil(screen:find("◀ leaf", 1, true), "the marker is before the text, not after it")
  end)
end)
