-- A big session's last rows while it opens (`session/preview`, view/preview.lua), against
-- the real daemon. Which answer comes first is made certain in the client (`spy` below): the
-- open is sent to the daemon only once the preview has answered (the daemon draws no
-- preview of a file it already has open), and an answer can be held back. Every answer is
-- the daemon's own; a refusal is made real (the path a directory while it is asked).
-- first_rows_spec.lua measures the real race on a 118 MB file.
local H = require("helpers")

local BIG_ENTRIES = 5000 -- about 6 MB: over the MIN_SIZE these specs set
-- view/preview.lua asks for a preview from 32 MB; these specs lower the bound so that a
-- generated file of a few MB stands for a big one (first_rows_spec.lua opens 118 MB)
local SPEC_MIN_SIZE = 4 * 1024 * 1024
local preview_mod = require("sessiontree.view.preview")
local MIN_SIZE = preview_mod.MIN_SIZE

--- Wrap client.request. Every request is recorded in the list returned (with a function
--- that undoes the wrap). `hooks[method](cb, err, result, params)` gets that method's
--- answer instead of the plugin's callback `cb` (to hold it back or watch it);
--- `hooks.defer[method](send, params)` gets the sending of that request, to do later (or
--- never).
local function spy(hooks)
  hooks = hooks or {}
  local client = require("sessiontree.client")
  local orig = client.request
  local sent = {}
  client.request = function(method, params, cb)
    table.insert(sent, { method = method, params = params })
    local hook = hooks[method]
    local answer = hook and function(err, result)
      hook(cb, err, result, params)
    end or cb
    local function send()
      return orig(method, params, answer)
    end
    if hooks.defer and hooks.defer[method] then
      return hooks.defer[method](send, params)
    end
    return send()
  end
  return sent, function()
    client.request = orig
  end
end

local function methods_sent(sent)
  return vim.tbl_map(function(r)
    return r.method
  end, sent)
end

local function count(sent, method)
  local n = 0
  for _, r in ipairs(sent) do
    if r.method == method then
      n = n + 1
    end
  end
  return n
end

--- The last entry of a JSONL file (the leaf a fresh open restores).
local function last_entry(path)
  local entries = H.read_jsonl(path)
  return entries[#entries]
end

--- Collect vim.notify calls until the returned function is called (it returns them).
local function notes()
  local orig, got = vim.notify, {}
  vim.notify = function(msg, level)
    table.insert(got, { msg = msg, level = level })
  end
  return function()
    vim.notify = orig
    return got
  end
end

describe("a big session's preview", function()
  local env, generated, big, leaf, methods, view, restore

  setup(function()
    preview_mod.MIN_SIZE = SPEC_MIN_SIZE
    env = H.setup()
    generated = env.dir .. "/generated.jsonl"
    local r = vim.system({ H.python, H.repo_root .. "/benchmarks/gen_corpus.py", generated, tostring(BIG_ENTRIES) })
      :wait()
    assert.are.equal(0, r.code, r.stderr)
    assert.is_true(vim.uv.fs_stat(generated).size >= require("sessiontree.view.preview").MIN_SIZE)
    leaf = last_entry(generated)
    methods = require("sessiontree.client").methods
    view = require("sessiontree.view")
  end)

  -- a fresh copy for every test: the daemon draws no preview of a file it has open or has
  -- an index cache of (`indexed`: its open answers at once)
  before_each(function()
    big = H.subdir(env) .. "/big.jsonl"
    assert(vim.uv.fs_copyfile(generated, big))
  end)

  teardown(function()
    H.teardown()
    preview_mod.MIN_SIZE = MIN_SIZE
  end)

  after_each(function()
    if restore then
      restore()
      restore = nil
    end
    H.close_sidebars()
  end)

  --- Open `big` with its `session/open` held back, and wait for the preview's rows. Returns
  --- the sidebar, the function that sends the open, and the requests sent (spy).
  local function preview_first()
    local send_open
    local sent
    sent, restore = spy({
      defer = {
        [methods.open] = function(send)
          send_open = send
        end,
      },
    })
    require("sessiontree").open(big)
    H.wait(function()
      local s = view.get()
      return s and s.preview ~= nil
    end, "the preview's rows drawn", 15000)
    return view.get(), send_open, sent
  end

  it("draws the rows around the leaf while the open is pending, then the exact rows", function()
    local st, send_open, sent = preview_first()
    -- sent right after the open, with the sidebar's filter and its page size
    assert.are.same({ methods.open, methods.preview }, methods_sent(sent))
    assert.are.same({ path = big, filter = "default", limit = 400 }, sent[2].params)

    -- the preview's rows, drawn as rows are, the cursor on the leaf's row
    assert.is_nil(st.session)
    assert.is_true(#st.rows > 0)
    assert.are.same(vim.tbl_map(view.line, st.rows), H.lines(st))
    local row = H.cursor_row(st)
    assert.are.equal(leaf.id, row.id)
    assert.is_true(row.isLeaf)
    assert.are.equal(st.win, vim.api.nvim_get_current_win())
    local marks = vim.api.nvim_buf_get_extmarks(st.buf, require("sessiontree.highlight").ns, 0, -1, { details = true })
    local leaf_line
    for _, m in ipairs(marks) do
      if m[4].line_hl_group == "SessionTreeLeafLine" then
        leaf_line = m[2] + 1
      end
    end
    assert.are.equal(vim.api.nvim_win_get_cursor(st.win)[1], leaf_line)
    -- the status: the file is still being indexed; older entries are not in these rows
    assert.is_true(st.preview.above)
    assert.matches("Indexing %%<big%.jsonl… showing its last entries, not the older ones yet", vim.wo[st.win].winbar)
    assert.are.equal("Indexing big.jsonl… showing its last entries, not the older ones yet", view.footer(st))
    local preview_leaf_text = row.text

    -- display-only: an action says so and sends nothing
    local orig_input, asked = vim.ui.input, false
    vim.ui.input = function()
      asked = true
    end
    local said = notes()
    H.feed("L")
    H.feed("<CR>")
    local got = said()
    vim.ui.input = orig_input
    assert.is_false(asked)
    assert.are.equal(0, count(sent, methods.set_label) + count(sent, methods.navigate))
    assert.matches("big%.jsonl is still opening", got[1].msg)

    -- the open answers: its first page replaces the rows, the cursor stays on the leaf
    send_open()
    H.wait(function()
      return st.session and st.preview == nil and not st.loading
    end, "the exact rows drawn", 15000)
    assert.are.same(vim.tbl_map(view.line, st.rows), H.lines(st))
    assert.is_true(st.total >= #st.rows and #st.rows > 0)
    row = H.cursor_row(st)
    assert.are.equal(leaf.id, row.id)
    assert.are.equal(preview_leaf_text, row.text)
    assert.is_nil(vim.wo[st.win].winbar:find("Indexing", 1, true))
    assert.matches(st.total .. " rows", view.footer(st))
    assert.is_nil(st.ticket)
    -- and the actions work again
    assert.are.equal(1, count(sent, methods.preview))
  end)

  it("ignores a preview that answers after the exact rows", function()
    local held, drawn, send_open
    restore = select(2, spy({
      [methods.preview] = function(cb, err, result)
        drawn = result and #(result.rows or {})
        held = function()
          cb(err, result)
        end
        send_open()
      end,
      defer = {
        [methods.open] = function(send)
          send_open = send
        end,
      },
    }))
    local st = H.open(big)
    assert.is_true(drawn > 0, "the held preview has rows")
    local renders, lines, cursor = st.renders, H.lines(st), vim.api.nvim_win_get_cursor(st.win)
    held()
    assert.are.equal(renders, st.renders)
    assert.are.same(lines, H.lines(st))
    assert.are.same(cursor, vim.api.nvim_win_get_cursor(st.win))
    assert.is_nil(st.preview)
    assert.are.equal(leaf.id, H.cursor_row(st).id)
  end)

  it("ignores a preview of a session another open replaced", function()
    local held_preview, drawn
    restore = select(2, spy({
      [methods.preview] = function(cb, err, result)
        drawn = result and #(result.rows or {})
        held_preview = function()
          cb(err, result)
        end
      end,
      defer = {
        -- the big file's open is never sent; the small one's is
        [methods.open] = function(send, params)
          if params.path ~= big then
            send()
          end
        end,
      },
    }))
    require("sessiontree").open(big)
    local small = H.fixture("branched.jsonl", H.subdir(env))
    local st = H.open(small)
    H.wait(function()
      return held_preview
    end, "the preview answered", 15000)
    assert.is_true(drawn > 0, "the held preview has rows")
    local renders, lines = st.renders, H.lines(st)
    held_preview()
    assert.are.equal(st, view.get())
    assert.are.equal(renders, st.renders)
    assert.are.same(lines, H.lines(st))
    assert.is_nil(st.preview)
    assert.are.equal(small, st.path)
  end)

  it("drops the preview's rows when the open fails", function()
    local st, send_open = preview_first()
    -- the daemon refuses the open for real: by then the path is a directory
    assert(os.rename(big, big .. ".moved"))
    assert(vim.uv.fs_mkdir(big, 448))
    local said = notes()
    send_open()
    H.wait(function()
      return not vim.api.nvim_buf_is_valid(st.buf)
    end, "the sidebar closed", 15000)
    local got = said()
    assert(vim.uv.fs_rmdir(big))
    assert.is_nil(view.get())
    assert.matches("open .*big%.jsonl failed", got[#got].msg)
  end)

  it("ignores a preview the daemon refuses", function()
    local send_open, send_preview, refused
    local sent
    sent, restore = spy({
      [methods.preview] = function(cb, err, result)
        refused = err
        cb(err, result)
      end,
      defer = {
        [methods.open] = function(send)
          send_open = send
        end,
        [methods.preview] = function(send)
          send_preview = send
        end,
      },
    })
    local said = notes()
    require("sessiontree").open(big)
    -- the daemon refuses the preview for real: the path is a directory while it is asked
    assert(os.rename(big, big .. ".moved"))
    assert(vim.uv.fs_mkdir(big, 448))
    send_preview()
    H.wait(function()
      return refused ~= nil
    end, "the preview refused", 15000)
    assert(vim.uv.fs_rmdir(big))
    assert(os.rename(big .. ".moved", big))
    send_open()
    H.wait(function()
      local s = view.get()
      return s and s.session and not s.loading and #s.rows > 0
    end, "the exact rows drawn", 15000)
    local st = view.get()
    local got = said()
    assert.are.equal(1, count(sent, methods.preview))
    assert.are.same({}, got)
    assert.is_nil(st.preview)
    assert.are.equal(leaf.id, H.cursor_row(st).id)
    assert.are.same(vim.tbl_map(view.line, st.rows), H.lines(st))
  end)

  it("asks with the filter the sidebar shows", function()
    local small = H.fixture("branched.jsonl", H.subdir(env))
    local st = H.open(small)
    H.after_render(st, function()
      require("sessiontree.actions").set_filter(st, "no-tools")
    end)
    local sent
    sent, restore = spy()
    st = H.open(big)
    assert.are.equal(1, count(sent, methods.preview))
    assert.are.equal("no-tools", sent[2].params.filter)
    assert.are.equal("no-tools", st.filter)
  end)

  it("is not asked for a file below MIN_SIZE", function()
    local sent
    sent, restore = spy()
    local small = H.fixture("branched.jsonl", H.subdir(env))
    local st = H.open(small)
    assert.is_true(#st.rows > 0)
    assert.are.equal(1, count(sent, methods.open))
    assert.are.equal(0, count(sent, methods.preview))
  end)
end)

describe("sidebar.preview = false", function()
  local restore

  setup(function()
    preview_mod.MIN_SIZE = SPEC_MIN_SIZE
  end)

  teardown(function()
    preview_mod.MIN_SIZE = MIN_SIZE
  end)

  after_each(function()
    if restore then
      restore()
    end
    H.teardown()
    require("sessiontree").setup({})
  end)

  it("sends no preview, even for a big file", function()
    for _, opts in ipairs({ { sidebar = { preview = false } } }) do
      local env = H.setup(opts)
      assert.is_false(require("sessiontree.config").get().sidebar.preview)
      local big = env.dir .. "/big.jsonl"
      local r = vim.system({ H.python, H.repo_root .. "/benchmarks/gen_corpus.py", big, tostring(BIG_ENTRIES) }):wait()
      assert.are.equal(0, r.code, r.stderr)
      local sent
      sent, restore = spy()
      local st = H.open(big)
      restore()
      restore = nil
      assert.are.equal(1, count(sent, require("sessiontree.client").methods.open))
      assert.are.equal(0, count(sent, require("sessiontree.client").methods.preview))
      assert.are.equal(last_entry(big).id, H.cursor_row(st).id)
    end
  end)
end)
