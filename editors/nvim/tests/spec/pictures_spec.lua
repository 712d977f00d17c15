-- :SessionTree export, mark and diff against the real daemon, on the bundled demo session.
local H = require("helpers")

local DEMO = H.repo_root .. "/server/sessiontree/data/demo-session.jsonl"
local FIXTURE_TIP, LEAF, BRANCH_POINT = "1a2caaa9", "1a2ebbb8", "1a2c4443"

local function copy_demo(dir)
  local dest = dir .. "/demo.jsonl"
  local src = assert(io.open(DEMO, "rb"))
  local out = assert(io.open(dest, "wb"))
  out:write(src:read("*a"))
  src:close()
  out:close()
  return dest
end

local function read(path)
  local fh = assert(io.open(path, "rb"))
  local s = fh:read("*a")
  fh:close()
  return s
end

describe("export and diff", function()
  local env, st, path

  setup(function()
    env = H.setup()
  end)
  teardown(function()
    H.teardown()
  end)
  before_each(function()
    path = copy_demo(H.subdir(env))
    st = H.open(path)
  end)
  after_each(function()
    -- the diff tabs come after the sidebar's
    while #vim.api.nvim_list_tabpages() > 1 do
      vim.cmd("tablast")
      vim.cmd("tabclose")
    end
    H.close_sidebars()
  end)

  it("exports the path to the cursor's entry as redacted Markdown", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, FIXTURE_TIP)
    local out = H.tmpdir() .. "/branch.md"
    local done
    require("sessiontree").export({ format = "md", file = out, on_done = function(r)
      done = r
    end })
    H.wait(function()
      return done ~= nil
    end, "export")
    assert.is_true(done.redacted)
    local text = read(out)
    assert.matches("^# Add a due%-date column", text)
    assert.truthy(text:find("Migrate the fixture file instead.", 1, true))
    assert.is_nil(text:find("Make Store.load tolerant", 1, true))
    assert.matches("exported %d+ entries", require("sessiontree.pictures").report(done, out))
  end)

  it(":SessionTree export jsonl subtree writes a session file the core loads", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, BRANCH_POINT)
    local out = H.tmpdir() .. "/sub.jsonl"
    vim.cmd("SessionTree export jsonl subtree " .. out)
    H.wait(function()
      return vim.fn.filereadable(out) == 1
    end, "the exported file")
    local lines = H.read_jsonl(out)
    assert.are.equal("session", lines[1].type)
    assert.are.equal(path, lines[1].parentSession)
    local ids = {}
    for _, e in ipairs(lines) do
      ids[e.id or ""] = true
    end
    assert.is_true(ids[FIXTURE_TIP] and ids[LEAF] and true)
  end)

  it(":SessionTree mark and :SessionTree diff open the two sides in diff mode", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, FIXTURE_TIP)
    vim.cmd("SessionTree mark")
    H.put_cursor_on(st, LEAF)
    vim.cmd("SessionTree diff")
    H.wait(function()
      return st.diff_bufs ~= nil
    end, "the diff tab")
    local left = table.concat(vim.api.nvim_buf_get_lines(st.diff_bufs[1], 0, -1, false), "\n")
    local right = table.concat(vim.api.nvim_buf_get_lines(st.diff_bufs[2], 0, -1, false), "\n")
    assert.matches("common ancestor: " .. BRANCH_POINT, left)
    assert.truthy(left:find("tests/fixtures/tasks.json: write", 1, true))
    assert.truthy(right:find("src/store.py: edit", 1, true))
    assert.truthy(right:find("tests/test_due.py: write", 1, true))
    for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      assert.is_true(vim.wo[w].diff)
    end
  end)

  it(":SessionTree diff A B with ids and a dry run of the redaction", function()
    local shown
    require("sessiontree").diff({ a = FIXTURE_TIP, b = LEAF, on_show = function(r)
      shown = r
    end })
    H.wait(function()
      return shown ~= nil
    end, "diff")
    assert.are.equal(BRANCH_POINT, shown.ancestorId)
    vim.cmd("tabclose")
    vim.api.nvim_set_current_win(st.win)
    vim.cmd("SessionTree export dry-run")
    H.wait(function()
      return st.redactions_buf ~= nil
    end, "the dry run")
    local text = table.concat(vim.api.nvim_buf_get_lines(st.redactions_buf, 0, -1, false), "\n")
    assert.matches("^# Would redact 0 in %d+ entries", text)
  end)
end)

describe(":SessionTree export completion", function()
  it("offers the formats and the options", function()
    local got = vim.fn.getcompletion("SessionTree export ", "cmdline")
    table.sort(got)
    assert.are.same({ "dry-run", "html", "jsonl", "md", "no-redact", "redact", "subtree" }, got)
  end)
end)

describe("the export and compare actions", function()
  it("can be mapped in the sidebar and compare the marked entry with the cursor's", function()
    local env = H.setup({ keymaps = { M = "compare_mark", D = "compare" } })
    local st = H.open(copy_demo(env.dir))
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, FIXTURE_TIP)
    H.feed("M")
    H.put_cursor_on(st, LEAF)
    H.feed("D")
    H.wait(function()
      return st.diff_bufs ~= nil
    end, "the diff tab")
    local right = table.concat(vim.api.nvim_buf_get_lines(st.diff_bufs[2], 0, -1, false), "\n")
    assert.truthy(right:find("# B: " .. LEAF, 1, true))
    vim.cmd("tabclose")
    H.close_sidebars()
    H.teardown()
  end)
end)

describe("an export's file name", function()
  local P = require("sessiontree.pictures")

  it("is written only when it is a plain file name (defence in depth)", function()
    for _, ok in ipairs({ "0195-1a2b.md", "a.b-c_d.jsonl", "x" }) do
      assert.is_true(P.is_plain_file_name(ok), ok)
    end
    for _, bad in ipairs({ "../outside/pwn-leaf.md", "/etc/passwd", "a/b.md", "a\\b.md", "..", ".hidden", "-rf.md", "a..b", "a\nb", "", ("x"):rep(121) }) do
      assert.is_false(P.is_plain_file_name(bad), bad)
    end
    assert.is_false(P.is_plain_file_name(nil))
    local target, why = P.target({ suggestedName = "../outside/pwn-leaf.md" })
    assert.is_nil(target)
    assert.matches("not a plain file name", why)
    assert.are.equal(vim.fn.getcwd() .. "/s-e1.md", P.target({ suggestedName = "s-e1.md" }))
    -- a file the user names is theirs to name
    assert.are.equal("/tmp/mine.md", P.target({ suggestedName = "../x" }, "/tmp/mine.md"))
  end)

  it("from a session whose id is a path stays in the working directory", function()
    local env = H.setup()
    local dir = H.subdir(env)
    local work = dir .. "/work"
    vim.fn.mkdir(work, "p")
    local path = dir .. "/evil.jsonl"
    vim.fn.writefile({
      vim.json.encode({ type = "session", version = 3, id = "../outside/pwn", timestamp = "2026-01-01T00:00:00.000Z", cwd = dir }),
      vim.json.encode({ type = "message", id = "../../leaf", parentId = vim.NIL, timestamp = "2026-01-01T00:00:01.000Z", message = { role = "user", content = "hi" } }),
    }, path)
    local st = H.open(path)
    vim.cmd.cd(work)
    vim.api.nvim_set_current_win(st.win)
    local done, file
    require("sessiontree").export({ format = "md", on_done = function(r, f)
      done, file = r, f
    end })
    H.wait(function()
      return done ~= nil
    end, "export")
    assert.is_true(P.is_plain_file_name(done.suggestedName), done.suggestedName)
    assert.are.equal(work .. "/" .. done.suggestedName, file)
    assert.are.equal(1, vim.fn.filereadable(file))
    assert.are.equal(0, vim.fn.isdirectory(dir .. "/outside"))
    assert.are.same({ done.suggestedName }, vim.fn.readdir(work))
    vim.cmd.cd(env.dir)
    H.teardown()
  end)
end)
