-- :SessionTree restore against the real daemon, on a real git working tree whose files a
-- session's tool calls changed on two branches, with the person's own edits since
-- (tests/checkpoint_scenario.py): the preview buffer (each file's status and why, the exact
-- unified diffs), restoring keeps the person's edit and never writes the conflict, `i` the
-- unknown files, `c` the conversation, `u` undoes; a preview the disk changed under is
-- refused and made again. Plus a tmux capture of the preview in a real terminal
-- (test-artifacts/nvim-restore-*.txt and .ansi).
local H = require("helpers")

--- The scenario under dir: its paths, node ids and the contents the tests expect.
local function scenario(dir)
  local r = vim.system({ H.python, H.repo_root .. "/tests/checkpoint_scenario.py", dir }, { text = true }):wait()
  assert.are.equal(0, r.code, r.stderr)
  return vim.json.decode(r.stdout)
end

local function read(path)
  local fh = io.open(path, "rb")
  if not fh then
    return nil
  end
  local s = fh:read("*a")
  fh:close()
  return s
end

local function git_status(ws)
  local r = vim.system({ "git", "-C", ws, "status", "--porcelain" }, { text = true }):wait()
  assert.are.equal(0, r.code, r.stderr)
  return r.stdout
end

local function text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

--- The preview context once it shows `phase` after `renders` draws.
local function wait_phase(buf, phase, renders, msg)
  local restore = require("sessiontree.restore")
  H.wait(function()
    local ctx = restore.context(buf)
    return ctx and ctx.phase == phase and (ctx.renders or 0) > (renders or 0)
  end, msg or phase, 15000)
  return restore.context(buf)
end

local function tmux(sock, args)
  local argv = { "tmux", "-L", sock, "-f", "/dev/null" }
  vim.list_extend(argv, args)
  return vim.system(argv, { text = true }):wait()
end

describe(":SessionTree restore", function()
  local env, sc, st, D

  before_each(function()
    env = H.setup()
    sc = scenario(env.dir .. "/scenario")
    -- the files' paths as the daemon shows them: relative to the workspace folder (the cwd)
    D = sc.workspace:sub(#env.dir + 2) .. "/"
    st = H.open(sc.session)
    vim.api.nvim_set_current_win(st.win)
  end)
  after_each(function()
    H.teardown()
  end)

  local function file(name)
    return sc.workspace .. "/" .. name
  end

  it("previews each file of the other branch, restores keeping the person's edit, and u undoes it", function()
    local status_before = git_status(sc.workspace)
    H.put_cursor_on(st, sc.target)
    H.feed("r")
    H.wait(function()
      return st.restore_buf ~= nil
    end, "the preview buffer")
    local buf = st.restore_buf
    local ctx = wait_phase(buf, "preview", 0)
    assert.are.equal("diff", vim.bo[buf].filetype)
    assert.are.equal(buf, vim.api.nvim_get_current_buf(), "the preview has the focus")
    local shown = text(buf)
    assert.truthy(shown:find("# Restore files to " .. sc.target .. ": [write: feature.py]\n", 1, true), shown)
    assert.truthy(shown:find("# 2 files written, 2 left as they are:", 1, true), shown)
    for _, want in ipairs({
      "#   change     " .. D .. "app.py  merged with your changes since",
      "#   conflict   " .. D .. "config.py  your changes and the restore touch the same lines · not written",
      "#   create     " .. D .. "feature.py  created as at the target",
      "#   unknown    " .. D .. "notes.md  its content at the target is not known: not seen in the session before · left alone (i includes the unknown files)",
    }) do
      assert.truthy(shown:find(want, 1, true), "missing: " .. want .. "\n" .. shown)
    end
    -- the exact diffs: the person's first line is context, b and c go back to branch one
    assert.truthy(shown:find(" import os  # mine: kept by the restore\n \n a = 1\n-b = 20\n-c = 3\n+b = 2\n+c = 30\n", 1, true), shown)
    assert.truthy(shown:find("+<<<<<<< disk (your version)\n level = 5\n+||||||| session (current node)\n+level = 2\n+=======\n+level = 1\n+>>>>>>> restore target", 1, true), shown)
    assert.truthy(shown:find("--- /dev/null\n+++ b/" .. D .. "feature.py\n", 1, true), shown)
    assert.are.equal(sc.disk["app.py"], read(file("app.py")), "a preview writes nothing")

    local renders = ctx.renders
    H.feed("a")
    ctx = wait_phase(buf, "restored", renders)
    assert.are.equal(sc.restored["app.py"], read(file("app.py")))
    assert.are.equal(sc.restored["feature.py"], read(file("feature.py")))
    assert.are.equal(sc.disk["config.py"], read(file("config.py")), "the conflict is not written")
    assert.are.equal(sc.disk["notes.md"], read(file("notes.md")), "the unknown file is left alone")
    assert.are.equal(sc.leaf, st.leaf_id, "the conversation stays")
    shown = text(buf)
    assert.truthy(shown:find("# Restored 2 files to " .. sc.target, 1, true), shown)
    assert.truthy(shown:find("#   conflict   " .. D .. "config.py", 1, true), shown)

    renders = ctx.renders
    H.feed("u")
    wait_phase(buf, "undone", renders)
    assert.are.equal(sc.disk["app.py"], read(file("app.py")))
    assert.is_nil(read(file("feature.py")))
    assert.are.equal(status_before, git_status(sc.workspace))
    assert.truthy(text(buf):find("# undone: put back 2 files", 1, true), text(buf))
  end)

  it("i includes the unknown files, c adds the conversation; u puts back files and leaf", function()
    vim.cmd("SessionTree restore " .. sc.target)
    H.wait(function()
      return st.restore_buf ~= nil
    end, "the preview buffer")
    local buf = st.restore_buf
    local ctx = wait_phase(buf, "preview", 0)
    H.feed("i")
    ctx = wait_phase(buf, "preview", ctx.renders, "the preview with the unknown files")
    assert.is_true(ctx.include_unknown)
    assert.truthy(text(buf):find("#   delete     " .. D .. "notes.md  taken as absent at the target", 1, true), text(buf))
    H.feed("c")
    ctx = wait_phase(buf, "preview", ctx.renders, "the preview with the conversation")
    assert.are.equal("both", ctx.part)
    local shown = text(buf)
    assert.truthy(shown:find("# Restore the conversation and files to " .. sc.target, 1, true), shown)
    assert.truthy(shown:find("# 3 files written, 1 left as they are:", 1, true), shown)
    assert.truthy(shown:find("# The conversation moves to " .. sc.target, 1, true), shown)

    H.feed("a")
    ctx = wait_phase(buf, "restored", ctx.renders)
    H.wait(function()
      return st.leaf_id == sc.target and not st.loading
    end, "the sidebar's leaf on branch one")
    assert.is_nil(read(file("notes.md")))
    assert.are.equal(sc.restored["app.py"], read(file("app.py")))

    H.feed("u")
    wait_phase(buf, "undone", ctx.renders)
    H.wait(function()
      return st.leaf_id == sc.leaf and not st.loading
    end, "the leaf back on branch two")
    assert.are.equal(sc.disk["notes.md"], read(file("notes.md")))
    assert.are.equal(sc.disk["app.py"], read(file("app.py")))
    assert.is_nil(read(file("feature.py")))
    assert.truthy(text(buf):find("the conversation is back where it was", 1, true), text(buf))
  end)

  it("a preview the disk changed under is refused, nothing written, and made again", function()
    H.put_cursor_on(st, sc.target)
    H.feed("r")
    H.wait(function()
      return st.restore_buf ~= nil
    end, "the preview buffer")
    local buf = st.restore_buf
    local ctx = wait_phase(buf, "preview", 0)
    local token = ctx.preview.previewToken
    local edited = sc.disk["app.py"] .. "# one more line\n"
    vim.fn.writefile(vim.split(edited, "\n", { plain = true }), file("app.py"), "b")
    assert.are.equal(edited, read(file("app.py")))
    local warned = {}
    local orig = vim.notify
    vim.notify = function(msg, level)
      table.insert(warned, { msg, level })
      orig(msg, level)
    end
    local renders = ctx.renders
    local ok, err = pcall(function()
      H.feed("a")
      ctx = wait_phase(buf, "preview", renders, "the preview made again")
    end)
    vim.notify = orig
    assert.is_true(ok, tostring(err))
    assert.are.equal(edited, read(file("app.py")), "nothing written")
    assert.is_nil(read(file("feature.py")))
    assert.are.same(
      { "sessiontree: the files or the session changed since the preview; nothing was written (previewed again)", vim.log.levels.WARN },
      warned[1]
    )
    -- the new preview is of the disk as it is now: the new line merged in too
    assert.are_not.equal(token, ctx.preview.previewToken)
    assert.truthy(text(buf):find("#   change     " .. D .. "app.py  merged with your changes since", 1, true), text(buf))
  end)

  it(":SessionTree restore undo asks first, and says when there is none", function()
    local restore = require("sessiontree.restore")
    local done
    restore.open({ state = st, id = sc.target, on_show = function(buf)
      restore.apply(buf, function(res)
        done = res
      end)
    end })
    H.wait(function()
      return done ~= nil
    end, "the restore")
    assert.are.equal(sc.restored["feature.py"], read(file("feature.py")))
    local asked
    local orig = vim.ui.select
    vim.ui.select = function(items, opts, on_choice)
      asked = opts.prompt
      vim.ui.select = orig
      on_choice(items[1])
    end
    local undone
    restore.undo({ state = st, on_done = function(res)
      undone = res or false
    end })
    H.wait(function()
      return undone ~= nil
    end, "the undo")
    vim.ui.select = orig
    assert.are.equal(("Undo the last restore (put back %sapp.py, %sfeature.py)?"):format(D, D), asked)
    assert.is_nil(read(file("feature.py")))
    assert.are.equal(sc.disk["app.py"], read(file("app.py")))
    local said
    local notify = vim.notify
    vim.notify = function(msg)
      said = msg
    end
    undone = nil
    restore.undo({ state = st, on_done = function(res)
      undone = res or false
    end })
    H.wait(function()
      return undone ~= nil
    end, "the second undo")
    vim.notify = notify
    assert.are.equal("sessiontree: there is no restore to undo", said)
  end)
end)

describe("the restore keymaps", function()
  after_each(function()
    H.teardown()
  end)

  it("are options: remapped, disabled with false, a bad action refused", function()
    local ok, err = pcall(require("sessiontree").setup, { restore = { keymaps = { x = "no_such_action" } } })
    assert.is_false(ok)
    assert.matches('restore.keymaps%["x"%]', tostring(err))
    local env = H.setup({ restore = { keymaps = { a = false, ["<CR>"] = false, R = "apply" } } })
    local sc = scenario(env.dir .. "/scenario")
    local st = H.open(sc.session)
    require("sessiontree.restore").open({ state = st, id = sc.target })
    H.wait(function()
      return st.restore_buf ~= nil and require("sessiontree.restore").context(st.restore_buf).phase == "preview"
    end, "the preview")
    local maps = {}
    for _, m in ipairs(vim.api.nvim_buf_get_keymap(st.restore_buf, "n")) do
      maps[m.lhs] = m.desc
    end
    assert.is_nil(maps["a"])
    assert.is_nil(maps["<CR>"])
    assert.matches("Restore: write what the preview shows", maps["R"])
    assert.matches("Include the unknown files", maps["i"])
    assert.truthy(text(st.restore_buf):find("# R restore · i include unknown files", 1, true), text(st.restore_buf))
  end)

  it("refuse the conversation of another agent's read-only session (its resume command instead)", function()
    H.teardown()
    local env = H.setup()
    local home = env.dir .. "/home"
    local r = vim.system({ H.python, H.repo_root .. "/tests/other_agents_home.py", home, env.dir }, { text = true }):wait()
    assert.are.equal(0, r.code, r.stderr)
    local saved = vim.env.HOME
    vim.env.HOME = home
    local ok, err = pcall(function()
      local st = H.open(vim.json.decode(r.stdout).claude)
      assert.are.equal("claude", st.agent)
      vim.cmd("SessionTree restore a8 both")
      assert.is_nil(st.restore_buf)
      assert.are.equal("claude --resume 11111111-2222-3333-4444-555555555555", vim.fn.getreg('"'))
    end)
    vim.env.HOME = saved
    assert.is_true(ok, tostring(err))
  end)
end)

describe("the restore preview in a real terminal", function()
  it("draws the statuses and the diffs (tmux captures saved to test-artifacts/nvim-restore-*)", function()
    assert.are.equal(1, vim.fn.executable("tmux"), "tmux is not installed (scripts/setup-system.sh)")
    H.teardown()
    local dir = H.tmpdir()
    vim.fn.mkdir(dir .. "/agent", "p")
    local sc = scenario(dir .. "/scenario")
    local sock = "sessiontree-nvim-restore-" .. vim.fn.getpid()
    local cmd = table.concat({
      "cd " .. vim.fn.shellescape(dir) .. " &&",
      "SESSIONTREE_SERVER=" .. vim.fn.shellescape(H.server),
      "SESSIONTREE_TEST_AGENT_DIR=" .. vim.fn.shellescape(dir .. "/agent"),
      vim.fn.shellescape(vim.v.progpath),
      "-u " .. vim.fn.shellescape(H.plugin_root .. "/tests/minimal_init.lua"),
      "-i NONE -n",
      vim.fn.shellescape("+SessionTree open " .. sc.session),
    }, " ")
    local started = tmux(sock, { "new-session", "-d", "-x", "120", "-y", "60", cmd })
    assert.are.equal(0, started.code, started.stderr)
    local artifacts = H.repo_root .. "/test-artifacts"
    vim.fn.mkdir(artifacts, "p")
    local screen = ""
    local function wait_screen(want, name)
      local ok = vim.wait(20000, function()
        screen = tmux(sock, { "capture-pane", "-p", "-t", "0" }).stdout or ""
        return screen:find(want, 1, true) ~= nil
      end, 100)
      vim.wait(300)
      screen = tmux(sock, { "capture-pane", "-p", "-t", "0" }).stdout or ""
      local colored = tmux(sock, { "capture-pane", "-p", "-e", "-t", "0" }).stdout or ""
      vim.fn.writefile(vim.split(screen, "\n", { plain = true }), artifacts .. "/" .. name .. ".txt")
      vim.fn.writefile(vim.split(colored, "\n", { plain = true }), artifacts .. "/" .. name .. ".ansi")
      return ok
    end
    local ok, err = pcall(function()
      assert.is_true(wait_screen("[write: feature.py]", "nvim-restore-sidebar"), "the sidebar never showed up:\n" .. screen)
      -- the target is the last row of the sidebar (branch one, drawn after the active branch)
      tmux(sock, { "send-keys", "-t", "0", "G", "r" })
      assert.is_true(wait_screen("+>>>>>>> restore target", "nvim-restore-preview"), "no preview:\n" .. screen)
      for _, want in ipairs({ "# Restore files to " .. sc.target, "conflict", "unknown", "-b = 20", "+c = 30" }) do
        assert.truthy(screen:find(want, 1, true), "not on screen: " .. want .. "\n" .. screen)
      end
      tmux(sock, { "send-keys", "-t", "0", "a" })
      assert.is_true(wait_screen("# Restored 2 files", "nvim-restore-applied"), "not restored:\n" .. screen)
      tmux(sock, { "send-keys", "-t", "0", "u" })
      assert.is_true(wait_screen("# undone: put back 2 files", "nvim-restore-undone"), "not undone:\n" .. screen)
    end)
    tmux(sock, { "kill-server" })
    assert.is_true(ok, tostring(err))
    assert.are.equal(sc.disk["app.py"], read(sc.workspace .. "/app.py"))
  end)
end)
