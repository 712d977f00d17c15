-- Claude Code and Codex sessions in Neovim: listed with their agent, drawn as trees,
-- read-only (<CR> copies the resume command instead of navigating), nothing written to
-- ~/.claude or ~/.codex; plus a tmux capture of the sidebar (test-artifacts/nvim-other-agents.txt).
local H = require("helpers")

local CLAUDE_ID = "11111111-2222-3333-4444-555555555555"

--- A HOME inside dir holding a Claude Code and a Codex session of dir (tests/other_agents_home.py).
local function other_agents_home(dir)
  local home = dir .. "/home"
  local r = vim
    .system({ H.python, H.repo_root .. "/tests/other_agents_home.py", home, dir }, { text = true })
    :wait()
  assert.are.equal(0, r.code, r.stderr)
  return home, vim.json.decode(r.stdout)
end

--- Every path under root with its size and mtime (looking never writes).
local function snapshot(root)
  local out = {}
  for name, kind in vim.fs.dir(root, { depth = 20 }) do
    local st = vim.uv.fs_stat(root .. "/" .. name)
    table.insert(out, ("%s %s %d %d"):format(name, kind, st.size, st.mtime.sec * 1000000000 + st.mtime.nsec))
  end
  table.sort(out)
  return out
end

local function tmux(sock, args)
  local argv = { "tmux", "-L", sock, "-f", "/dev/null" }
  vim.list_extend(argv, args)
  return vim.system(argv, { text = true }):wait()
end

describe("other agents' sessions", function()
  local saved_home = vim.env.HOME
  after_each(function()
    H.teardown()
    vim.env.HOME = saved_home
  end)

  it("are listed with their agent, open read-only and copy their resume command", function()
    H.teardown()
    local env = H.setup()
    local home, files = other_agents_home(env.dir)
    vim.env.HOME = home -- the daemon (started on the first request) reads this HOME
    local before = { snapshot(home .. "/.claude"), snapshot(home .. "/.codex") }

    local items, formatted
    local orig = vim.ui.select
    vim.ui.select = function(list, opts, on_choice)
      items = list
      formatted = vim.tbl_map(opts.format_item, list)
      for _, s in ipairs(list) do
        if s.agent == "claude" then
          return on_choice(s)
        end
      end
      on_choice(nil)
    end
    require("sessiontree").sessions()
    H.wait(function()
      return items ~= nil
    end, "the session picker", 15000)
    vim.ui.select = orig
    local agents = {}
    for _, s in ipairs(items) do
      agents[s.agent] = s
    end
    assert.is_not_nil(agents.claude, vim.inspect(items))
    assert.is_not_nil(agents.codex, vim.inspect(items))
    assert.are.equal("claude --resume " .. CLAUDE_ID, agents.claude.resumeCommand)
    local joined = table.concat(formatted, "\n")
    assert.truthy(joined:find("[Claude Code] List the files", 1, true), joined)
    assert.truthy(joined:find("[Codex] count the files", 1, true), joined)

    -- the picked Claude Code session is drawn as a tree: the rewind is a branch
    local view = require("sessiontree.view")
    H.wait(function()
      local st = view.get()
      return st and st.renders > 0 and not st.loading and st.agent == "claude"
    end, "the Claude Code session in the sidebar", 15000)
    local st = view.get()
    assert.are.equal(files.claude, st.path)
    assert.truthy(st.title:find("[Claude Code] List the files", 1, true), st.title)
    local text = table.concat(H.lines(st), "\n")
    assert.truthy(text:find("now read a.txt", 1, true), text)
    assert.truthy(text:find("├─", 1, true), text)
    assert.truthy(text:find("[bash: ls -la]", 1, true), text)

    -- <CR> copies the resume command instead of navigating (read-only)
    vim.fn.setreg('"', "")
    require("sessiontree.actions").navigate(st)
    assert.are.equal("claude --resume " .. CLAUDE_ID, vim.fn.getreg('"'))
    vim.fn.setreg('"', "")
    require("sessiontree.actions").copy_resume(st)
    assert.are.equal("claude --resume " .. CLAUDE_ID, vim.fn.getreg('"'))

    -- one agent's sessions only
    local only
    vim.ui.select = function(list, _, on_choice)
      only = list
      on_choice(nil)
    end
    require("sessiontree").subcommands.sessions({ "codex" })
    H.wait(function()
      return only ~= nil
    end, "the codex-only picker", 15000)
    vim.ui.select = orig
    assert.are.same({ "codex" }, vim.tbl_map(function(s)
      return s.agent
    end, only))

    -- a write on it is refused with -32008
    local client = require("sessiontree.client")
    local _, err = client.request_sync(client.methods.set_label, { session = st.session, targetId = "a5", label = "x" }, 10000)
    assert.are.equal(-32008, err and err.code, vim.inspect(err))
    vim.wait(300)
    assert.are.same(before, { snapshot(home .. "/.claude"), snapshot(home .. "/.codex") })
  end)

  it("draws in a real terminal (tmux capture saved to test-artifacts/nvim-other-agents.txt)", function()
    assert.are.equal(1, vim.fn.executable("tmux"), "tmux is not installed (scripts/setup-system.sh)")
    H.teardown()
    local dir = H.tmpdir()
    vim.fn.mkdir(dir .. "/agent", "p")
    local home, files = other_agents_home(dir)
    local sock = "sessiontree-nvim-agents-" .. vim.fn.getpid()
    local cmd = table.concat({
      "cd " .. vim.fn.shellescape(dir) .. " &&",
      "HOME=" .. vim.fn.shellescape(home),
      "SESSIONTREE_SERVER=" .. vim.fn.shellescape(H.server),
      "SESSIONTREE_TEST_AGENT_DIR=" .. vim.fn.shellescape(dir .. "/agent"),
      vim.fn.shellescape(vim.v.progpath),
      "-u " .. vim.fn.shellescape(H.plugin_root .. "/tests/minimal_init.lua"),
      "-i NONE -n",
      vim.fn.shellescape("+SessionTree open " .. files.claude),
    }, " ")
    local started = tmux(sock, { "new-session", "-d", "-x", "110", "-y", "22", cmd })
    assert.are.equal(0, started.code, started.stderr)
    local screen = ""
    local ok = vim.wait(15000, function()
      screen = tmux(sock, { "capture-pane", "-p", "-t", "0" }).stdout or ""
      return screen:find("You're welcome.", 1, true) ~= nil
    end, 100)
    local colored = tmux(sock, { "capture-pane", "-p", "-e", "-t", "0" }).stdout or ""
    tmux(sock, { "kill-server" })
    local artifacts = H.repo_root .. "/test-artifacts"
    vim.fn.mkdir(artifacts, "p")
    vim.fn.writefile(vim.split(screen, "\n", { plain = true }), artifacts .. "/nvim-other-agents.txt")
    vim.fn.writefile(vim.split(colored, "\n", { plain = true }), artifacts .. "/nvim-other-agents.ansi")
    assert.is_true(ok, "the sidebar never showed up; screen:\n" .. screen)
    for _, expected in ipairs({ "[Claude Code] List the files", "now read a.txt", "[bash: ls -la]", "├─" }) do
      assert.truthy(screen:find(expected, 1, true), "not on screen: " .. expected .. "\n" .. screen)
    end
  end)
end)
