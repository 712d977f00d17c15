-- The sidebar against the real daemon over stdio, on real files.
local H = require("helpers")

local EXPECTED_DEFAULT = {
  "• [start] user: Add a --verbose flag to the CLI",
  "• assistant: I will read the CLI first.",
  "• [read: src/cli.py]",
  "• assistant: The flag is added.",
  "├─ • user: Document it in the README instead",
  "│     • assistant: README updated.",
  "└─ user: Now write tests for it",
  "      assistant: Tests added in tests/test_cli.py.",
}

local function marks_at(state, lnum)
  local out = {}
  local ns = require("sessiontree.highlight").ns
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(state.buf, ns, { lnum, 0 }, { lnum, -1 }, { details = true })) do
    local d = m[4]
    table.insert(out, {
      col = m[3],
      end_col = d.end_col,
      hl = d.hl_group,
      line_hl = d.line_hl_group,
      virt = d.virt_text and d.virt_text[1][1],
    })
  end
  return out
end

local function has_mark(marks, hl, col, end_col)
  for _, m in ipairs(marks) do
    if m.hl == hl and (col == nil or (m.col == col and m.end_col == end_col)) then
      return true
    end
  end
  return false
end

describe("sidebar", function()
  local env, path, st

  -- one daemon for the whole block; every test gets its own copy of the fixture
  setup(function()
    env = H.setup()
  end)

  teardown(function()
    H.teardown()
  end)

  before_each(function()
    path = H.fixture("branched.jsonl", H.subdir(env))
    st = H.open(path)
  end)

  after_each(function()
    H.close_sidebars()
  end)

  it("shows the session with the daemon's rows and the expected lines", function()
    local lines = H.lines(st)
    assert.are.same(EXPECTED_DEFAULT, lines)
    assert.are.same(H.daemon_lines(st, "default"), lines)
    local buf, win = st.buf, st.win
    assert.are.equal("nofile", vim.bo[buf].buftype)
    assert.are.equal("sessiontree", vim.bo[buf].filetype)
    assert.is_false(vim.bo[buf].modifiable)
    assert.is_true(vim.wo[win].winfixwidth)
    assert.is_false(vim.wo[win].number)
    assert.is_true(vim.wo[win].cursorline)
    assert.are.equal(50, vim.api.nvim_win_get_width(win))
    -- the daemon's displayName (an untitled session: its first user message), not the file name
    assert.are.equal("Add a --verbose flag to the CLI", st.title)
    assert.matches("Add a %-%-verbose flag to the CLI", vim.wo[win].winbar)
  end)

  it("starts with the cursor on the leaf's row (its nearest visible ancestor)", function()
    -- the leaf is the label entry, hidden in the default filter: its parent is selected
    local row = H.cursor_row(st)
    assert.are.equal("a0000004", row.id)
    assert.are.equal(6, vim.api.nvim_win_get_cursor(st.win)[1])
  end)

  it("colours rows by kind and marks the active path, labels and the leaf", function()
    -- line 1: "• [start] user: ..." (the bullet is 4 bytes: U+2022 and a space)
    local m1 = marks_at(st, 0)
    assert.is_true(has_mark(m1, "SessionTreeActive", 0, 4))
    assert.is_true(has_mark(m1, "SessionTreeLabel", 4, 12))
    assert.is_true(has_mark(m1, "SessionTreeUser", 12, #EXPECTED_DEFAULT[1]))
    assert.is_true(has_mark(marks_at(st, 1), "SessionTreeAssistant"))
    assert.is_true(has_mark(marks_at(st, 2), "SessionTreeTool"))
    -- a row off the active path has no bullet mark, its prefix is a guide
    local m7 = marks_at(st, 6)
    assert.is_false(has_mark(m7, "SessionTreeActive"))
    assert.is_true(has_mark(m7, "SessionTreeGuide", 0, #"└─ "))
    -- the leaf row (line 6)
    local leaf = vim.tbl_filter(function(m)
      return m.line_hl ~= nil
    end, marks_at(st, 5))
    assert.are.equal(1, #leaf)
    assert.are.equal("SessionTreeLeafLine", leaf[1].line_hl)
    for lnum = 0, 7 do
      if lnum ~= 5 then
        for _, m in ipairs(marks_at(st, lnum)) do
          assert.is_nil(m.line_hl)
        end
      end
    end
  end)

  it("cycles and jumps between filter modes, changing the lines and the winbar", function()
    vim.api.nvim_set_current_win(st.win)
    H.after_render(st, function()
      H.feed("<Tab>")
    end)
    assert.are.equal("no-tools", st.filter)
    local no_tools = H.lines(st)
    assert.are.same(H.daemon_lines(st, "no-tools"), no_tools)
    assert.is_false(vim.tbl_contains(no_tools, "• [read: src/cli.py]"))
    assert.matches("%[no%-tools%]", vim.wo[st.win].winbar)
    H.after_render(st, function()
      H.feed("<Tab>")
    end)
    assert.are.equal("user-only", st.filter)
    assert.are.same({
      "• [start] user: Add a --verbose flag to the CLI",
      "├─ • user: Document it in the README instead",
      "└─ user: Now write tests for it",
    }, H.lines(st))
    H.after_render(st, function()
      H.feed("<S-Tab>")
    end)
    assert.are.equal("no-tools", st.filter)
    H.after_render(st, function()
      H.feed("f5")
    end)
    assert.are.equal("all", st.filter)
    local all = H.lines(st)
    assert.are.same(H.daemon_lines(st, "all"), all)
    assert.is_true(#all > #EXPECTED_DEFAULT)
    assert.is_true(vim.tbl_contains(all, "• [model: anthropic/claude-sonnet-4]"))
    H.after_render(st, function()
      H.feed("f4")
    end)
    assert.are.same({ "• [start] user: Add a --verbose flag to the CLI" }, H.lines(st))
    H.after_render(st, function()
      H.feed("f1")
    end)
    assert.are.same(EXPECTED_DEFAULT, H.lines(st))
  end)

  it("keeps the cursor on the same entry when the filter changes", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "u0000002")
    H.after_render(st, function()
      H.feed("<Tab>")
    end)
    assert.are.equal("u0000002", H.cursor_row(st).id)
    H.after_render(st, function()
      H.feed("<Tab>")
    end)
    assert.are.equal("u0000002", H.cursor_row(st).id)
  end)

  it("searches with / and clears with <BS>", function()
    vim.api.nvim_set_current_win(st.win)
    H.answer_inputs({ "readme" })
    H.after_render(st, function()
      H.feed("/")
    end)
    assert.are.equal("readme", st.search)
    local lines = H.lines(st)
    assert.are.same(H.daemon_lines(st, "default", "readme"), lines)
    assert.is_true(#lines >= 1 and #lines < #EXPECTED_DEFAULT)
    assert.matches("/readme/", vim.wo[st.win].winbar)
    H.after_render(st, function()
      H.feed("<BS>")
    end)
    assert.are.same(EXPECTED_DEFAULT, H.lines(st))
  end)

  it("sets a label with L (written to the file) and clears it with dL", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "a0000002")
    local prompts = H.answer_inputs({ "flag done" })
    H.after_render(st, function()
      H.feed("L")
    end, "label drawn")
    H.wait(function()
      return vim.tbl_contains(H.lines(st), "• [flag done] assistant: The flag is added.")
    end, "labelled line")
    assert.matches("Label", prompts[1])
    assert.are.equal("a0000002", H.cursor_row(st).id)
    local entries = H.read_jsonl(path)
    local last = entries[#entries]
    assert.are.equal("label", last.type)
    assert.are.equal("a0000002", last.targetId)
    assert.are.equal("flag done", last.label)
    H.feed("dL")
    H.wait(function()
      return vim.tbl_contains(H.lines(st), "• assistant: The flag is added.")
    end, "label cleared")
    entries = H.read_jsonl(path)
    last = entries[#entries]
    assert.are.equal("label", last.type)
    assert.are.equal("a0000002", last.targetId)
    assert.is_true(last.label == nil or last.label == "")
  end)

  it("navigates here with a summary: a branch_summary is written and the leaf moves", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "a0000003")
    local before = #H.read_jsonl(path)
    local prompts = H.answer_inputs({ "Tried the README route" })
    H.feed("<CR>")
    assert.matches("summary", prompts[1])
    H.wait(function()
      return #H.read_jsonl(path) == before + 1
    end, "branch summary written")
    local entries = H.read_jsonl(path)
    local summary = entries[#entries]
    assert.are.equal("branch_summary", summary.type)
    assert.are.equal("a0000003", summary.parentId)
    assert.are.equal("Tried the README route", summary.summary)
    H.wait(function()
      return st.leaf_id == summary.id and not st.loading
    end, "sidebar follows the new leaf")
    -- the summary is now the leaf, under a0000003; that branch is active and comes first
    assert.are.same({
      "• [start] user: Add a --verbose flag to the CLI",
      "• assistant: I will read the CLI first.",
      "• [read: src/cli.py]",
      "• assistant: The flag is added.",
      "├─ • user: Now write tests for it",
      "│     • assistant: Tests added in tests/test_cli.py.",
      "│     • [branch summary]: Tried the README route",
      "└─ user: Document it in the README instead",
      "      assistant: README updated.",
    }, H.lines(st))
    assert.are.equal("a0000003", H.cursor_row(st).id)
    assert.are.same(H.daemon_lines(st, "default"), H.lines(st))
    -- another daemon reading the file sees the same leaf
    local other = H.second_daemon(env)
    local opened = other.request("session/open", { path = path })
    assert.are.equal(summary.id, opened.leafId)
  end)

  it("navigates here without a summary: nothing is written, the leaf moves", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "a0000003")
    local bytes = table.concat(vim.fn.readfile(path, "b"), "\n")
    H.answer_inputs({ "" })
    H.feed("<CR>")
    H.wait(function()
      return st.leaf_id == "a0000003" and not st.loading
    end, "leaf moved to a0000003")
    assert.are.equal(bytes, table.concat(vim.fn.readfile(path, "b"), "\n"))
    assert.are.equal("a0000003", H.cursor_row(st).id)
    assert.is_true(vim.tbl_contains(H.lines(st), "├─ • user: Now write tests for it"))
    assert.are.same(H.daemon_lines(st, "default"), H.lines(st))
    -- the daemon keeps the chosen leaf in its state file: a second daemon on the same
    -- agent dir restores it
    local other = H.second_daemon(env)
    local opened = other.request("session/open", { path = path })
    assert.are.equal("a0000003", opened.restoredLeafId or opened.leafId)
  end)

  it("goes back to the previous leaf with u after a jump", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "a0000003")
    H.answer_inputs({ "" })
    H.feed("<CR>")
    H.wait(function()
      return st.leaf_id == "a0000003" and not st.loading
    end, "leaf moved")
    H.feed("u")
    H.wait(function()
      return st.leaf_id == "l0000001" and not st.loading
    end, "leaf back on the label entry")
    assert.are.same(EXPECTED_DEFAULT, H.lines(st))
    assert.are.equal("a0000004", H.cursor_row(st).id)
  end)

  it("recovers when the daemon restarts: R reopens the file", function()
    local lines = H.lines(st)
    require("sessiontree.client").stop()
    H.wait(function()
      return #vim.lsp.get_clients({ name = "sessiontree" }) == 0
    end, "daemon stopped")
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "u0000002")
    H.after_render(st, function()
      H.feed("R")
    end, "redrawn by a new daemon", 15000)
    assert.are.equal(1, #vim.lsp.get_clients({ name = "sessiontree" }))
    assert.are.same(lines, H.lines(st))
    assert.are.equal("u0000002", H.cursor_row(st).id)
  end)

  it("shows an entry appended by another process, live, keeping the cursor", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "u0000001")
    H.append_external(path, {
      type = "message",
      id = "u0000009",
      parentId = "l0000001",
      timestamp = "2026-01-01T00:00:20.000Z",
      message = { role = "user", content = { { type = "text", text = "And a changelog line" } }, timestamp = 1767225620000 },
    })
    H.wait(function()
      return vim.tbl_contains(H.lines(st), "│     • user: And a changelog line")
    end, "external append drawn", 10000)
    assert.are.equal("u0000001", H.cursor_row(st).id)
    assert.are.equal("u0000009", st.leaf_id)
  end)

  it("previews the entry under the cursor as JSON", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "t0000001")
    H.feed("p")
    H.wait(function()
      return st.preview_buf and vim.api.nvim_buf_is_valid(st.preview_buf)
    end, "preview shown")
    local text = table.concat(vim.api.nvim_buf_get_lines(st.preview_buf, 0, -1, false), "\n")
    local decoded = vim.json.decode(text)
    assert.are.equal("t0000001", decoded.id)
    assert.are.equal("call_1", decoded.message.toolCallId)
    assert.are.equal("json", vim.bo[st.preview_buf].filetype)
  end)

  it("shows what the model sees from the entry under the cursor", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "a0000003")
    H.feed("c")
    H.wait(function()
      return st.context_buf and vim.api.nvim_buf_is_valid(st.context_buf)
    end, "context shown")
    local text = table.concat(vim.api.nvim_buf_get_lines(st.context_buf, 0, -1, false), "\n")
    assert.matches("Now write tests for it", text)
    assert.matches("Tests added in tests/test_cli.py.", text)
    assert.is_nil(text:find("Document it in the README", 1, true))
    assert.are.equal("nofile", vim.bo[st.context_buf].buftype)
  end)

  it("branches to a new session from a user message with b", function()
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "u0000002")
    local renders = st.renders
    H.feed("b")
    H.wait(function()
      return st.path ~= path and st.renders > renders and not st.loading
    end, "new session shown")
    assert.are.equal("Now write tests for it", st.editor_text)
    local lines = H.lines(st)
    assert.are.same(H.daemon_lines(st, "default"), lines)
    -- the new session holds the path up to the message's parent
    assert.are.equal("• assistant: The flag is added.", lines[#lines])
    assert.is_nil(table.concat(lines, "\n"):find("README", 1, true))
    -- the original file is untouched
    assert.are.equal(
      table.concat(vim.fn.readfile(H.fixtures .. "/branched.jsonl", "b"), "\n"),
      table.concat(vim.fn.readfile(path, "b"), "\n")
    )
  end)

  it("shows the keymaps with g? in a float sized to its content, and closes with q", function()
    vim.api.nvim_set_current_win(st.win)
    H.feed("g?")
    assert.is_truthy(st.help_buf)
    local lines = vim.api.nvim_buf_get_lines(st.help_buf, 0, -1, false)
    local help = table.concat(lines, "\n")
    assert.matches("label_set", help)
    assert.matches("f5%s+filter_all", help)
    -- as wide as its longest line, one screen line per line: nothing wraps or is cut off
    local widest = 0
    for _, l in ipairs(lines) do
      widest = math.max(widest, vim.fn.strdisplaywidth(l))
    end
    -- the 80x24 editor of a default terminal holds it, border and command line included
    assert.are.same({ 80, 24 }, { vim.o.columns, vim.o.lines })
    assert.is_true(widest + 2 <= vim.o.columns and #lines + 2 + vim.o.cmdheight <= vim.o.lines)
    local win = st.help_win
    assert.are.equal(widest, vim.api.nvim_win_get_width(win))
    assert.are.equal(#lines, vim.api.nvim_win_get_height(win))
    assert.is_false(vim.wo[win].wrap)
    assert.are.equal(#lines, vim.api.nvim_win_text_height(win, {}).all)
    assert.matches("sessiontree keymaps", vim.api.nvim_win_get_config(win).title[1][1])
    H.feed("q") -- closes the help float
    assert.is_false(vim.api.nvim_win_is_valid(win))
    -- an editor narrower than the help: lines wrap at word boundaries, the float grows to
    -- their wrapped height, and stays inside the editor
    vim.api.nvim_set_current_win(st.win)
    vim.o.columns, vim.o.lines = 62, 40
    local ok, err = pcall(function()
      H.feed("g?")
      win = st.help_win
      assert.are.equal(60, vim.api.nvim_win_get_width(win))
      assert.is_true(vim.wo[win].wrap and vim.wo[win].linebreak)
      local need = vim.api.nvim_win_text_height(win, {}).all
      assert.is_true(need > #lines)
      assert.are.equal(need, vim.api.nvim_win_get_height(win))
      H.feed("q")
    end)
    vim.o.columns, vim.o.lines = 80, 24
    assert(ok, err)
    vim.api.nvim_set_current_win(st.win)
    H.feed("q")
    assert.is_false(require("sessiontree.view").is_open())
  end)
end)

describe(":SessionTree", function()
  after_each(function()
    H.teardown()
  end)

  it("toggles the sidebar on the most recent session of the cwd without creating files", function()
    local env = H.setup()
    local sessions_root = env.agent .. "/sessions"
    -- nothing yet: a warning, and still no file anywhere
    vim.cmd("SessionTree")
    vim.wait(1500, function()
      return require("sessiontree.view").is_open()
    end)
    assert.is_false(require("sessiontree.view").is_open())
    assert.are.same({}, vim.fn.globpath(sessions_root, "**/*.jsonl", false, true))
    -- a session made by the daemon itself for this cwd (an assistant entry persists it)
    local client = require("sessiontree.client")
    local created = client.request_sync("session/create", { cwd = env.dir })
    client.request_sync("session/append", {
      session = created.session,
      entry = { type = "message", message = { role = "user", content = "hello there", timestamp = 1 } },
    })
    client.request_sync("session/append", {
      session = created.session,
      entry = {
        type = "message",
        message = { role = "assistant", content = { { type = "text", text = "hi" } }, stopReason = "stop", timestamp = 2 },
      },
    })
    client.request_sync("session/flush", { session = created.session })
    local files = vim.fn.globpath(sessions_root, "**/*.jsonl", false, true)
    assert.are.equal(1, #files)
    vim.cmd("SessionTree")
    H.wait(function()
      local s = require("sessiontree.view").get()
      return s and s.renders > 0 and not s.loading
    end, "sidebar opened by :SessionTree")
    local st = require("sessiontree.view").get()
    assert.are.same({ "• user: hello there", "• assistant: hi" }, H.lines(st))
    vim.cmd("SessionTree")
    assert.is_false(require("sessiontree.view").is_open())
    assert.are.equal(1, #vim.fn.globpath(sessions_root, "**/*.jsonl", false, true))

    -- the picker lists the sessions of the cwd through vim.ui.select
    local orig, items, labels = vim.ui.select, nil, {}
    vim.ui.select = function(list, opts, on_choice)
      vim.ui.select = orig
      items = list
      for _, it in ipairs(list) do
        table.insert(labels, opts.format_item(it))
      end
      on_choice(list[1])
    end
    vim.cmd("SessionTree sessions")
    H.wait(function()
      local s = require("sessiontree.view").get()
      return s and s.renders > 0 and not s.loading
    end, "sidebar opened from the picker")
    assert.are.equal(1, #items)
    assert.are.equal(vim.uv.fs_realpath(files[1]), vim.uv.fs_realpath(items[1].path))
    assert.matches("hello there", labels[1])
    assert.are.same({ "• user: hello there", "• assistant: hi" }, H.lines(require("sessiontree.view").get()))
    -- one name in the picker and the sidebar's title (not the file name)
    assert.are.equal("hello there", require("sessiontree.view").get().title)
  end)

  it("shares one daemon between tab pages showing the same session", function()
    local env = H.setup()
    local path = H.fixture("branched.jsonl", env.dir)
    local st1 = H.open(path)
    vim.cmd("tabnew")
    local st2 = H.open(path)
    assert.are_not.equal(st1.tab, st2.tab)
    assert.are.equal(st1.session, st2.session)
    assert.are.equal(1, #vim.lsp.get_clients({ name = "sessiontree" }))
    -- a label set from the second tab shows in the first
    vim.api.nvim_set_current_win(st2.win)
    H.put_cursor_on(st2, "a0000001")
    H.answer_inputs({ "read it" })
    H.feed("L")
    H.wait(function()
      return vim.tbl_contains(H.lines(st1), "• [read it] assistant: I will read the CLI first.")
        and vim.tbl_contains(H.lines(st2), "• [read it] assistant: I will read the CLI first.")
        and not st1.loading
        and not st2.loading
    end, "label shown in both tabs")
    assert.are.same(H.lines(st1), H.lines(st2))
  end)

  it("opens a file with :SessionTree open and closes it with :SessionTree close", function()
    local env = H.setup()
    local path = H.fixture("branched.jsonl", env.dir)
    vim.cmd("SessionTree open " .. vim.fn.fnameescape(path))
    H.wait(function()
      local s = require("sessiontree.view").get()
      return s and s.renders > 0 and not s.loading
    end, "opened")
    assert.are.same(EXPECTED_DEFAULT, H.lines(require("sessiontree.view").get()))
    vim.cmd("SessionTree close")
    assert.is_false(require("sessiontree.view").is_open())
  end)

  it("shows the context of the row under the cursor in a scratch split", function()
    local env = H.setup()
    local st = H.open(H.fixture("branched.jsonl", env.dir))
    vim.api.nvim_set_current_win(st.win)
    H.put_cursor_on(st, "a0000004")
    vim.cmd("SessionTree context")
    H.wait(function()
      return st.context_buf ~= nil
    end, "context")
    local text = table.concat(vim.api.nvim_buf_get_lines(st.context_buf, 0, -1, false), "\n")
    assert.matches("README updated.", text)
    assert.is_nil(text:find("Now write tests", 1, true))
  end)
end)

describe("a damaged file", function()
  after_each(function()
    H.teardown()
  end)

  it("opens with a warning, loses nothing readable, and :SessionTree doctor lists the bad line", function()
    local env = H.setup()
    local path = H.fixture("damaged.jsonl", env.dir)
    local bytes = vim.fn.readfile(path, "b")
    local warnings = {}
    local notify = vim.notify
    vim.notify = function(msg, level)
      if level == vim.log.levels.WARN then
        table.insert(warnings, msg)
      end
    end
    local ok, st = pcall(H.open, path)
    vim.notify = notify
    assert.is_true(ok, st)
    assert.are.same(EXPECTED_DEFAULT, H.lines(st))
    assert.matches("1 unreadable line", table.concat(warnings, "\n"))
    vim.cmd("SessionTree doctor")
    H.wait(function()
      return st.doctor_buf ~= nil
    end, "doctor report")
    local text = table.concat(vim.api.nvim_buf_get_lines(st.doctor_buf, 0, -1, false), "\n")
    assert.matches("line 5", text)
    assert.is_nil(text:find("0 problem", 1, true))
    -- looking changed nothing on disk
    assert.are.same(bytes, vim.fn.readfile(path, "b"))
  end)
end)

describe("a long session", function()
  after_each(function()
    H.teardown()
  end)

  it("is paged as the cursor moves, and ends up equal to the daemon's full list", function()
    local env = H.setup({ sidebar = { page_size = 20 } })
    local path = env.dir .. "/long.jsonl"
    local r = vim.system({ H.python, H.repo_root .. "/benchmarks/gen_corpus.py", path, "300" }):wait()
    assert.are.equal(0, r.code, r.stderr)
    -- the `session/view` requests the sidebar makes (watched, passed on unchanged)
    local client = require("sessiontree.client")
    local request, views = client.request, {}
    client.request = function(method, params, cb)
      if method == client.methods.view then
        table.insert(views, vim.deepcopy(params))
      end
      return request(method, params, cb)
    end
    local ok, st = pcall(H.open, path)
    client.request = request
    assert(ok, st)
    local full = H.daemon_lines(st, "default")
    assert.is_true(#full > 60, "the corpus is long")
    -- only a window is loaded, around the leaf, from one request: the first page's answer
    -- holds the rows around the leaf (`selectedWindow`)
    assert.are.equal(1, #views, vim.inspect(views))
    assert.are.same({ 0, 20, 20 }, { views[1].offset, views[1].limit, views[1].selectedWindow })
    assert.is_true(st.first > 0 and #st.rows == 20, ("first %d, %d rows"):format(st.first, #st.rows))
    assert.is_true(#H.lines(st) < #full)
    assert.are.equal(#full, st.total)
    vim.api.nvim_set_current_win(st.win)
    local leaf_id = H.cursor_row(st).id
    -- scroll to the top: earlier pages are fetched, the cursor stays on its entry
    -- headless Neovim runs fed keys without going through the main loop, so the
    -- CursorMoved a terminal would fire is fired here
    local function move(keys)
      H.feed(keys)
      vim.api.nvim_exec_autocmds("CursorMoved", { buffer = st.buf })
    end
    for _ = 1, 40 do
      move("gg")
      vim.wait(200, function()
        return not st.loading and not st.paging
      end, 5)
      if st.first == 0 then
        break
      end
    end
    assert.are.equal(0, st.first)
    move("G")
    for _ = 1, 40 do
      vim.wait(200, function()
        return not st.loading and not st.paging
      end, 5)
      move("G")
      if st.first + #st.rows >= st.total then
        break
      end
    end
    H.wait(function()
      return not st.loading and not st.paging
    end)
    assert.are.same(full, H.lines(st))
    assert.is_true(require("sessiontree.view").focus_id(st, leaf_id))
  end)
end)

describe(":checkhealth sessiontree", function()
  after_each(function()
    H.teardown()
  end)

  it("reports the daemon, its version, the protocol version and the config as OK", function()
    H.setup()
    vim.cmd("checkhealth sessiontree")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    assert.matches("OK configuration is valid", text)
    assert.matches("OK daemon found: ", text)
    assert.matches("OK daemon version: sessiontree %S+", text)
    assert.matches("OK protocol version: 1", text)
    assert.is_nil(text:find("ERROR", 1, true))
    vim.cmd("silent! tabclose")
  end)

  it("reports a missing daemon as an error naming the command that builds it", function()
    H.setup({ cmd = { "/nonexistent/sessiontree", "serve" } })
    vim.cmd("checkhealth sessiontree")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    assert.matches("ERROR daemon not found", text)
    local build = "bash '" .. H.plugin_root .. "/scripts/build.sh'"
    assert.is_truthy(text:find("Run `" .. build .. "`", 1, true), text)
    assert.is_truthy(text:find("remove the `cmd` option", 1, true), text)
    vim.cmd("silent! tabclose")
  end)

  it("without `cmd`, looks for the build step's daemon, then $PATH, and says what to run", function()
    local client = require("sessiontree.client")
    if vim.uv.fs_stat(client.venv_daemon) then
      pending("this checkout has a build step venv (" .. client.venv_daemon .. "): the daemon is found")
      return
    end
    H.setup()
    require("sessiontree").setup({ agent_dir = H.tmpdir() })
    local path = vim.env.PATH
    vim.env.PATH = table.concat(
      vim.tbl_filter(function(d)
        return vim.fn.executable(d .. "/sessiontree") ~= 1
      end, vim.split(path, ":", { plain = true })),
      ":"
    )
    local argv, source = client.resolve_cmd()
    vim.cmd("checkhealth sessiontree")
    vim.env.PATH = path
    assert.are.same({ "sessiontree", "serve" }, argv)
    assert.are.equal("path", source)
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    assert.matches('ERROR daemon not found: "sessiontree" is not executable', text)
    assert.is_truthy(text:find("no build step venv at " .. client.venv_daemon, 1, true), text)
    assert.is_truthy(text:find("Run `bash '" .. H.plugin_root .. "/scripts/build.sh'`", 1, true), text)
    assert.is_nil(text:find("`cmd` option", 1, true))
    vim.cmd("silent! tabclose")
  end)
end)
