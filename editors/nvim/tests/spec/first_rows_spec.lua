-- First rows of a 100,000-entry session (issue 15): picked from `:SessionTree sessions` as a
-- user does, timed from the pick to the sidebar's buffer holding the session's rows, first
-- with the daemon's index cache cold, then warm (a fresh daemon, the cache written by the
-- first open). Cold, the rows of `session/preview` (view/preview.lua) come first and are
-- timed too. The figures go to the suite's output and to test-artifacts/first-rows-nvim.txt.
-- No time limit here (timing targets live in benchmarks/): only a sanity bound, so a hang fails.
local H = require("helpers")

local ENTRIES = 100000
local SANITY_MS = 60000

--- The last complete JSON line of a file (its leaf entry, as the agent appended it).
local function last_entry(path)
  local f = assert(io.open(path, "rb"))
  local size = f:seek("end")
  f:seek("set", math.max(0, size - 262144))
  local tail = f:read("a")
  f:close()
  local last
  for line in tail:gmatch("[^\n]+") do
    last = line
  end
  return vim.json.decode(last)
end

local function index_files()
  local dir = (os.getenv("XDG_CACHE_HOME") or (vim.uv.os_homedir() .. "/.cache")) .. "/sessiontree/index"
  local names = {}
  for name, kind in vim.fs.dir(dir) do
    if kind == "file" and not name:find("%.tmp$") then
      table.insert(names, name)
    end
  end
  return names, dir
end

describe("first rows of a 100,000-entry session", function()
  local env, path, leaf

  setup(function()
    env = H.setup()
    -- generated once for this file, in the test's own agent dir, in the `--<cwd>--`
    -- directory every agent of the pi family reads for this cwd
    local dir = env.agent .. "/sessions/--" .. (env.dir:gsub("^/+", ""):gsub("[/\\:]", "-")) .. "--"
    vim.fn.mkdir(dir, "p")
    local tmp = env.dir .. "/big.jsonl.part"
    local t0 = vim.uv.hrtime()
    local r = vim.system({ H.python, H.repo_root .. "/benchmarks/gen_corpus.py", tmp, tostring(ENTRIES) }):wait()
    assert.are.equal(0, r.code, r.stderr)
    local f = assert(io.open(tmp, "rb"))
    local header = vim.json.decode(f:read("l"))
    f:close()
    path = dir .. "/2025-11-20T23-33-01-000Z_" .. header.id .. ".jsonl"
    assert(os.rename(tmp, path))
    leaf = last_entry(path)
    io.stdout:write(("  generated %d entries (%.0f MB) in %.1f s\n"):format(
      ENTRIES,
      vim.uv.fs_stat(path).size / 1e6,
      (vim.uv.hrtime() - t0) / 1e9
    ))
  end)

  teardown(function()
    H.teardown()
    if path then
      os.remove(path)
    end
  end)

  --- Picks the session from `:SessionTree sessions`; returns the sidebar's state, the
  --- milliseconds from the pick to its buffer holding the session's exact rows, and what was
  --- seen of a preview (view/preview.lua) before them: {ms, rows, cursor id}, or nil when no
  --- preview rows were drawn first.
  local function pick_and_time()
    local view = require("sessiontree.view")
    local orig, t0 = vim.ui.select, nil
    vim.ui.select = function(list, _, on_choice)
      vim.ui.select = orig
      for i, item in ipairs(list) do
        if vim.uv.fs_realpath(item.path) == path then
          t0 = vim.uv.hrtime()
          return on_choice(item, i)
        end
      end
      error("the 100,000-entry session is not listed: " .. vim.inspect(vim.tbl_map(function(s)
        return s.path
      end, list)))
    end
    H.feed(":SessionTree sessions<CR>")
    local st, ms, seen
    -- the list (the daemon starting, every session summarised) comes before the pick: not timed
    local ok = vim.wait(SANITY_MS + 30000, function()
      if not t0 then
        return false
      end
      st = view.get()
      if not (st and st.buf and #st.rows > 0 and vim.api.nvim_buf_is_valid(st.buf)) then
        return false
      end
      local first = vim.api.nvim_buf_get_lines(st.buf, 0, 1, false)[1]
      if first == nil or first ~= view.line(st.rows[1]) then
        return false
      end
      local now = (vim.uv.hrtime() - t0) / 1e6
      if st.preview then
        -- the preview's rows: provisional, the exact ones are still to come
        if not seen then
          local row = H.cursor_row(st)
          seen = { ms = now, rows = vim.deepcopy(st.rows), cursor = row and row.id }
        end
        return false
      end
      if not st.session then
        return false
      end
      ms = now
      return true
    end, 1)
    vim.ui.select = orig
    assert(t0, "the session picker was never shown")
    assert(ok, "no rows in the sidebar within " .. SANITY_MS .. " ms of the pick")
    assert.is_true(ms < SANITY_MS, ("first rows after %.0f ms"):format(ms))
    -- settled (the leaf's page loaded, the cursor placed): then check what it shows
    H.wait(function()
      return st.renders > 0 and not st.loading and not st.paging and not st.preview
    end, "the sidebar settled", SANITY_MS)
    return st, ms, seen
  end

  --- The rows drawn are the session's, around its leaf, and the cursor is on the leaf.
  local function check(st)
    local view = require("sessiontree.view")
    assert.are.equal(path, vim.uv.fs_realpath(st.path))
    assert.are.equal("benchmark session", st.title)
    assert.are.equal(leaf.id, st.leaf_id)
    assert.is_true(st.total > ENTRIES / 2, "rows of the session: " .. st.total)
    local shown = H.lines(st)
    assert.is_true(#shown > 0 and #shown == #st.rows, #shown .. " lines for " .. #st.rows .. " rows")
    for i, row in ipairs(st.rows) do
      assert.matches("^%x%x%x%x%x%x%x%x$", row.id)
      assert.are.equal(view.line(row), shown[i])
    end
    local row = H.cursor_row(st)
    assert.are.equal(leaf.id, row.id)
    assert.is_true(row.isLeaf, "the cursor's row is the leaf")
    assert.are.equal(st.win, vim.api.nvim_get_current_win())
  end

  it("shows its first rows after a pick, index cache cold then warm (figures reported)", function()
    local names, dir = index_files()
    if #names > 0 then
      vim.fn.delete(dir, "rf")
    end
    local st, cold, cold_preview = pick_and_time()
    check(st)
    -- cold, the open indexes the whole file: the preview's rows come first, around the leaf,
    -- the cursor on the leaf's row
    assert(cold_preview, "no preview rows were drawn before the exact rows of the cold open")
    assert.is_true(cold_preview.ms < cold, ("preview %.0f ms, exact %.0f ms"):format(cold_preview.ms, cold))
    assert.are.equal(leaf.id, cold_preview.cursor)
    local holds_leaf = false
    for _, row in ipairs(cold_preview.rows) do
      holds_leaf = holds_leaf or row.id == leaf.id
    end
    assert.is_true(holds_leaf, "the preview's rows hold the leaf's row")
    -- the first open wrote the index cache and the view's first pages (idle time): wait for
    -- both before stopping that daemon
    H.wait(function()
      local kinds = {}
      for _, name in ipairs(index_files()) do
        kinds[name:match("%.(%w+)$") or ""] = true
      end
      return kinds.idx and kinds.view
    end, "the index cache and the first pages written", SANITY_MS)
    H.teardown()
    local warm, warm_preview
    st, warm, warm_preview = pick_and_time()
    check(st)

    local function figures(exact, seen)
      if seen then
        return ("%.0f ms (preview), exact rows %.0f ms"):format(seen.ms, exact)
      end
      return ("%.0f ms (exact rows, no preview drawn)"):format(exact)
    end
    local line = ("first rows of a 100,000-entry session (Neovim): cold %s; warm %s"):format(
      figures(cold, cold_preview),
      figures(warm, warm_preview)
    )
    io.stdout:write("  " .. line .. "\n")
    io.stdout:flush()
    vim.fn.mkdir(H.repo_root .. "/test-artifacts", "p")
    vim.fn.writefile({
      line,
      ("from the pick in :SessionTree sessions to the sidebar's buffer holding the session's rows: first the rows of session/preview (from the file's end, while the open indexes it; none when the daemon has the file indexed), then the exact rows (the open's first session/view page); %d entries, %.0f MB; cold: no index cache; warm: a fresh daemon, the index cache of the first open; %s"):format(
        ENTRIES,
        vim.uv.fs_stat(path).size / 1e6,
        os.date("!%Y-%m-%dT%H:%M:%SZ")
      ),
    }, H.repo_root .. "/test-artifacts/first-rows-nvim.txt")
  end)
end)
