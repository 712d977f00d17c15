-- Looking never writes: a v1 session in pi-mono's `--<path>--` directory, picked from
-- `:SessionTree sessions` as a user would, draws its tree and leaves every byte, name and
-- directory of the agent dir exactly as it was.
local H = require("helpers")

-- A v1 session written by pi-mono (no entry ids), from another project: read from ../shared
-- beside the repository, copied only into the test's temporary agent dir, never committed.
local REAL_V1 = vim.fs.normalize(H.repo_root .. "/../shared/fixtures/real/pimono-large-session.jsonl")

--- Every entry under root (itself excluded), keyed by its path relative to root: directories
--- with their mtime (it moves when anything is created or removed in them, even a lock file that
--- is gone again), files with size, mtime and sha256, links with their target.
local function snapshot(root)
  local out, files = {}, {}
  local function walk(dir, rel)
    local names = {}
    for name in vim.fs.dir(dir) do
      table.insert(names, name)
    end
    table.sort(names)
    for _, name in ipairs(names) do
      local abs, r = dir .. "/" .. name, rel == "" and name or (rel .. "/" .. name)
      local st = assert(vim.uv.fs_lstat(abs))
      local mtime = ("%d.%09d"):format(st.mtime.sec, st.mtime.nsec)
      if st.type == "link" then
        out[r] = { type = "link", target = vim.uv.fs_readlink(abs) }
      elseif st.type == "directory" then
        out[r] = { type = "dir", mode = st.mode, mtime = mtime }
        walk(abs, r)
      else
        out[r] = { type = st.type, mode = st.mode, size = st.size, mtime = mtime }
        table.insert(files, { abs = abs, rel = r })
      end
    end
  end
  walk(root, "")
  -- sha256sum rather than vim.fn.sha256, which refuses bytes with NUL in them
  for _, f in ipairs(files) do
    local r = vim.system({ "sha256sum", "--", f.abs }, { text = true }):wait()
    assert(r.code == 0, r.stderr)
    out[f.rel].sha256 = r.stdout:match("^(%x+)")
  end
  return out
end

--- The differences between two snapshots, one readable line each (empty when equal).
local function diff_snapshots(before, after)
  local lines = {}
  for rel, b in vim.spairs(before) do
    if after[rel] == nil then
      table.insert(lines, ("removed or renamed: %s (%s)"):format(rel, b.type))
    end
  end
  for rel, a in vim.spairs(after) do
    local b = before[rel]
    if b == nil then
      table.insert(lines, ("created: %s (%s, %s bytes)"):format(rel, a.type, tostring(a.size)))
    else
      local keys = vim.tbl_keys(vim.tbl_extend("force", {}, a, b))
      table.sort(keys)
      for _, k in ipairs(keys) do
        if a[k] ~= b[k] then
          table.insert(lines, ("changed: %s: %s %s -> %s"):format(rel, k, tostring(b[k]), tostring(a[k])))
        end
      end
    end
  end
  return lines
end

--- The sessions directory name of a cwd in the current encoding (reference-behavior.md §1).
local function encode_cwd(cwd)
  local real = vim.uv.fs_realpath(cwd)
  local home = vim.uv.fs_realpath(vim.uv.os_homedir())
  local tmp = vim.uv.fs_realpath(((os.getenv("TMPDIR") or "/tmp"):gsub("/+$", "")))
  local function dash(s)
    return (s:gsub("[/\\:]", "-"))
  end
  local function inside(base)
    if real == base then
      return ""
    end
    local prefix = base:sub(-1) == "/" and base or (base .. "/")
    return real:sub(1, #prefix) == prefix and real:sub(#prefix + 1) or nil
  end
  local rel = inside(home)
  if rel then
    return rel == "" and "-" or ("-" .. dash(rel))
  end
  rel = inside(tmp)
  if rel then
    return rel == "" and "-tmp" or ("-tmp-" .. dash(rel))
  end
  return "--" .. dash((real:gsub("^/+", ""))) .. "--"
end

describe("looking at a v1 session of pi-mono's directory", function()
  after_each(function()
    H.teardown()
  end)

  it("picked from :SessionTree sessions, it draws its tree and nothing in the agent dir changes", function()
    if not vim.uv.fs_stat(REAL_V1) then
      pending(
        "../shared/fixtures is not present: "
          .. REAL_V1
          .. " is missing (data from other projects is read from ../shared beside the repository, never copied into it)"
      )
      return
    end
    local env = H.setup()
    local sessions = env.agent .. "/sessions"
    -- the current encoding, with a v3 session of this cwd
    local current_dir = sessions .. "/" .. encode_cwd(env.dir)
    vim.fn.mkdir(current_dir, "p")
    local lines = vim.fn.readfile(H.fixtures .. "/branched.jsonl")
    local header = vim.json.decode(lines[1])
    header.cwd = env.dir
    lines[1] = vim.json.encode(header)
    local v3 = current_dir .. "/2026-01-10T09-00-00-000Z_" .. header.id .. ".jsonl"
    vim.fn.writefile(lines, v3)
    -- the form pi-mono writes and reads: `--<absolute cwd>--`; written rather than copied,
    -- because the shared file is read-only and a read-only copy would hide a write
    local pimono_dir = sessions .. "/--" .. (env.dir:gsub("^/+", ""):gsub("[/\\:]", "-")) .. "--"
    assert.are_not.equal(current_dir, pimono_dir)
    vim.fn.mkdir(pimono_dir, "p")
    local v1 = pimono_dir .. "/2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617.jsonl"
    local src = assert(io.open(REAL_V1, "rb"))
    local dst = assert(io.open(v1, "wb"))
    dst:write(src:read("a"))
    src:close()
    dst:close()
    local before = snapshot(env.agent)

    -- the default vim.ui.select (inputlist), answered with the keys a user types on reading
    -- the list: the number of the "/mode" session, then <CR>
    local orig, items, labels, picked = vim.ui.select, nil, {}, nil
    vim.ui.select = function(list, opts, on_choice)
      vim.ui.select = orig
      items = list
      local pick
      for i, item in ipairs(list) do
        labels[i] = opts.format_item(item)
        -- (a badge names the agent when the list holds several: "[pi] /mode")
        if labels[i]:find(" /mode  ", 1, true) then
          assert.is_nil(pick, "one row shows the v1 session: " .. vim.inspect(labels))
          pick = i
        end
      end
      assert(pick, "a row shows the v1 session: " .. vim.inspect(labels))
      picked = list[pick]
      vim.api.nvim_feedkeys(tostring(pick) .. vim.keycode("<CR>"), "t", false)
      return orig(list, opts, function(...)
        io.stdout:write("\n") -- the prompt the user answered ends its line in the test log
        return on_choice(...)
      end)
    end
    H.feed(":SessionTree sessions<CR>")
    local st
    H.wait(function()
      st = require("sessiontree.view").get()
      return st and st.renders > 0 and not st.loading and not st.paging
    end, "sidebar opened from :SessionTree sessions", 20000)
    vim.ui.select = orig

    -- the list held the sessions of both directory encodings
    local dirs = {}
    for _, item in ipairs(items) do
      dirs[vim.fs.dirname(vim.uv.fs_realpath(item.path))] = true
    end
    assert.is_true(dirs[current_dir], "listed: " .. vim.inspect(items))
    assert.is_true(dirs[pimono_dir], "listed: " .. vim.inspect(items))

    -- the tree of the v1 session is drawn: a window of the daemon's rows
    assert.are.equal(v1, vim.uv.fs_realpath(st.path))
    local full = H.daemon_lines(st)
    assert.is_true(#full > 100, "rows of the v1 session: " .. #full)
    assert.are.equal(#full, st.total)
    local shown = H.lines(st)
    assert.is_true(#shown > 0)
    assert.are.same(vim.list_slice(full, st.first + 1, st.first + #shown), shown)
    assert.is_truthy(st.leaf_id)
    -- the sidebar's title is the name the picker showed (not the file name)
    assert.are.equal("/mode", require("sessiontree").session_name(picked))
    assert.are.equal("/mode", st.title)
    assert.matches("/mode", vim.wo[st.win].winbar)

    -- anything written late (a debounced save, a lock released) has landed by now
    vim.wait(1000)
    assert.are.same({}, diff_snapshots(before, snapshot(env.agent)))
  end)
end)
