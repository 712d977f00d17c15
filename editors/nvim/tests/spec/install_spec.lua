-- The plugin-manager build step, run as a plugin manager runs it: in a copy of the
-- checkout, with no `sessiontree` on PATH and no `cmd` option. It makes the daemon's venv;
-- a fresh Neovim loading the plugin from the copy then finds and starts that daemon, and
-- :checkhealth names the exact command to run while the daemon is missing or too old.
local H = require("helpers")

-- What `pip install <repo root>` needs, from the working tree (untracked files included).
local PARTS = { "pyproject.toml", "README.md", "server", "protocol", "editors/nvim" }

local function copy_checkout(dst)
  local argv = { "git", "-C", H.repo_root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--" }
  local r = vim.system(vim.list_extend(argv, PARTS)):wait()
  assert(r.code == 0, r.stderr)
  local n = 0
  for _, rel in ipairs(vim.split(r.stdout, "\0", { plain = true, trimempty = true })) do
    local src = H.repo_root .. "/" .. rel
    if vim.uv.fs_stat(src) then -- a tracked file deleted in the work tree is not copied
      vim.fn.mkdir(vim.fs.dirname(dst .. "/" .. rel), "p")
      assert(vim.uv.fs_copyfile(src, dst .. "/" .. rel))
      n = n + 1
    end
  end
  assert(n > 50, "copied " .. n .. " files")
end

-- The Neovim a user starts: the plugin from the copy on 'runtimepath', setup() without
-- `cmd`; it writes what :checkhealth said and, given a session file, the sidebar's lines.
local CHILD = [[
local plugin, out, agent, session = _G.arg[1], _G.arg[2], _G.arg[3], _G.arg[4]
vim.opt.rtp:prepend(plugin)
vim.cmd("runtime plugin/sessiontree.lua")
require("sessiontree").setup({ agent_dir = agent, allowed_roots = { vim.fs.dirname(session) } })
vim.cmd("checkhealth sessiontree")
local result = { health = vim.api.nvim_buf_get_lines(0, 0, -1, false), cmd = require("sessiontree.client").cmd() }
vim.cmd("silent! tabclose | enew")
local st
if vim.fn.executable(result.cmd[1]) == 1 then
  require("sessiontree").open(session, { on_open = function(s) st = s end })
  vim.wait(20000, function() return st ~= nil and st.renders > 0 and not st.loading end, 20)
end
result.lines = st and vim.api.nvim_buf_get_lines(st.buf, 0, -1, false) or {}
vim.fn.writefile({ vim.json.encode(result) }, out)
require("sessiontree.client").stop()
]]

describe("the build step", function()
  after_each(function()
    H.teardown()
  end)

  it("makes a working daemon from a copy of the checkout; :checkhealth says what to run", function()
    local copy = H.tmpdir()
    copy_checkout(copy)
    local plugin = copy .. "/editors/nvim"
    local function git(...)
      local r = vim.system({ "git", "-C", copy, "-c", "user.name=t", "-c", "user.email=t@example.invalid", ... }):wait()
      assert(r.code == 0, r.stderr)
    end
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "a checkout")

    -- a PATH without any sessiontree, as on a machine where it was never pip-installed
    local path = table.concat(
      vim.tbl_filter(function(d)
        return vim.fn.executable(d .. "/sessiontree") ~= 1
      end, vim.split(vim.env.PATH, ":", { plain = true })),
      ":"
    )
    local work = H.tmpdir()
    vim.fn.mkdir(work .. "/agent", "p")
    local session = H.fixture("branched.jsonl", work)
    local child_lua = work .. "/child.lua"
    vim.fn.writefile(vim.split(CHILD, "\n", { plain = true }), child_lua)
    local function child()
      local out = work .. "/out.json"
      vim.fn.delete(out)
      local r = vim.system(
        { vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-l", child_lua, plugin, out, work .. "/agent", session },
        { env = { PATH = path }, cwd = work, timeout = 60000 }
      ):wait()
      assert(r.code == 0, "child Neovim: " .. (r.stderr or ""))
      local res = vim.json.decode(table.concat(vim.fn.readfile(out), "\n"))
      res.text = table.concat(res.health, "\n")
      return res
    end
    local build = "bash '" .. plugin .. "/scripts/build.sh'"

    -- before the build: the daemon is missing, and :checkhealth gives the command line
    local before = child()
    assert.matches('ERROR daemon not found: "sessiontree" is not executable', before.text)
    assert.is_truthy(before.text:find("Run `" .. build .. "`", 1, true), before.text)
    assert.are.same({}, before.lines)

    -- the command exactly as :checkhealth printed it, from another directory, like a
    -- plugin manager's build hook
    local t0 = vim.uv.hrtime()
    local r = vim.system({ "sh", "-c", build }, { env = { PATH = path }, cwd = work, text = true, timeout = 600000 }):wait()
    local seconds = (vim.uv.hrtime() - t0) / 1e9
    assert.are.equal(0, r.code, (r.stdout or "") .. (r.stderr or ""))
    io.stdout:write(("  (build step: %.1f s)\n"):format(seconds))
    assert.matches("ready: " .. vim.pesc(plugin) .. "/%.venv/bin/sessiontree", r.stdout)
    assert.are.equal(1, vim.fn.executable(plugin .. "/.venv/bin/sessiontree"))

    -- after it: the plugin starts that daemon by itself and draws the session
    local after = child()
    assert.are.same({ plugin .. "/.venv/bin/sessiontree", "serve" }, after.cmd)
    assert.matches("OK daemon found: " .. vim.pesc(plugin) .. "/%.venv/bin/sessiontree .*the build step's venv", after.text)
    assert.matches("OK daemon version: sessiontree %S+", after.text)
    assert.matches("OK protocol version: 1", after.text)
    assert.is_nil(after.text:find("ERROR", 1, true), after.text)
    assert.is_nil(after.text:find("WARNING", 1, true), after.text)
    assert.are.equal(8, #after.lines)
    assert.are.equal("• [start] user: Add a --verbose flag to the CLI", after.lines[1])

    -- the checkout moves on (a newer version, a new commit) without the build step: the
    -- daemon is too old and out of date, and :checkhealth says to run the build again
    local pyproject = copy .. "/pyproject.toml"
    local lines = vim.fn.readfile(pyproject)
    for i, l in ipairs(lines) do
      if l:match("^version = ") then
        lines[i] = 'version = "99.0.0"'
      end
    end
    vim.fn.writefile(lines, pyproject)
    git("commit", "-qam", "a newer version")
    local stale = child()
    assert.matches("ERROR daemon too old: %S+, this checkout of the plugin is 99%.0%.0", stale.text)
    assert.matches("WARNING the daemon was built from commit %x+; the checkout is now at %x+", stale.text)
    assert.is_truthy(stale.text:find("Run `" .. build .. "`", 1, true), stale.text)
  end)
end)
