---@mod sessiontree The session tree of a coding agent in a sidebar
---
--- Public API (also `:SessionTree {subcommand}`):
---   setup(opts)            store options (nothing starts)
---   toggle()               sidebar for the most recent session of the cwd
---   open(path)             sidebar for a session file
---   sessions(opts)         pick a session of the cwd (opts.all: of every project)
---   context(opts)          what the model sees from the entry under the cursor
---   doctor()               check the shown session's file for damage
---   export(opts)           save the path to the cursor's entry (md|html|jsonl, redacted)
---   mark(), diff(opts)     compare two entries in a diff tab (sessiontree.pictures)
---   search(text, opts)     search every session; the chosen hit opens drawn from it
---   restore(opts)          preview, then restore the files (and/or the conversation) to
---                          an entry of any branch; restore_undo() (sessiontree.restore)
---   close(), refresh()
---   :SessionTree shared    other machines' sessions in the shared store (sessiontree.shared)

local config = require("sessiontree.config")

local M = {}

--- Store options. Raises a clear error for a bad option; starts nothing.
---@param opts? table
function M.setup(opts)
  config.set(opts)
end

local function client()
  return require("sessiontree.client")
end
local function view()
  local v = require("sessiontree.view")
  v.subscribe()
  return v
end

local function notify_err(err, what)
  vim.notify(("sessiontree: %s failed: %s"):format(what, client().format_error(err)), vim.log.levels.ERROR)
end

local function opened(result, opts)
  if result.recovered then
    local r = result.recovered
    vim.notify(
      ("sessiontree: the file had %d unreadable line(s)%s; they were skipped%s"):format(
        r.skippedLines or 0,
        r.tornTail and " and a torn last line" or "",
        r.quarantinedCopy and (", a copy is at " .. r.quarantinedCopy) or ""
      ),
      vim.log.levels.WARN
    )
  end
  return view().show(result, opts)
end

--- Open a session file in the sidebar of this tab page.
---@param path string
---@param opts? {focus?: boolean, on_open?: fun(state), focus_id?: string}
function M.open(path, opts)
  opts = opts or {}
  if not path or path == "" then
    vim.notify("sessiontree: :SessionTree open needs a file", vim.log.levels.ERROR)
    return
  end
  path = vim.fn.fnamemodify(vim.fn.expand(path), ":p")
  local ticket
  client().request(client().methods.open, { path = path }, function(err, result)
    if err then
      require("sessiontree.view.preview").fail(ticket)
      return notify_err(err, "open " .. path)
    end
    local state = opened(result, vim.tbl_extend("force", opts, { ticket = ticket }))
    if opts.on_open then
      opts.on_open(state)
    end
  end)
  -- a big file: its last rows from the daemon while the open indexes it (view/preview.lua)
  ticket = require("sessiontree.view.preview").start(path, opts)
end

--- Open the sidebar on the most recent session of the cwd, or close it when shown.
--- Looking creates no file: without a session for the cwd, it says so.
function M.toggle(opts)
  opts = opts or {}
  local v = view()
  if v.is_open() then
    return v.close()
  end
  if v.reopen() then
    return
  end
  local cwd = vim.fn.getcwd()
  client().request(client().methods.recent, { cwd = cwd, limit = 1 }, function(err, result)
    if err then
      return notify_err(err, "recent")
    end
    local first = result and result.sessions and result.sessions[1]
    if not first then
      vim.notify(
        "sessiontree: no session for " .. cwd .. " (:SessionTree sessions lists them, :SessionTree open {file} opens one)",
        vim.log.levels.WARN
      )
      return
    end
    M.open(first.path, opts)
  end)
end

local function nonempty(v)
  return type(v) == "string" and v ~= "" and v or nil
end

--- The name of a listed session (a SessionInfo): the daemon's `displayName`, the one name
--- the sidebar's title shows too; from a daemon without it, the title or the first message.
---@param s table
---@return string
function M.session_name(s)
  return nonempty(s.displayName) or nonempty(s.title) or nonempty(s.firstMessage) or ""
end

--- Pick a session with vim.ui.select (from `session/list`) and open it.
---@param opts? {all?: boolean, agent?: string}
function M.sessions(opts)
  opts = opts or {}
  local params = { cwd = vim.fn.getcwd() }
  if opts.all then
    params.all = true
  end
  if opts.agent and opts.agent ~= "all" then
    params.agent = opts.agent -- "pi", "claude" or "codex"
  end
  client().request(client().methods.list, params, function(err, result)
    if err then
      return notify_err(err, "list")
    end
    local sessions = result.sessions or {}
    if type(result.hint) == "string" then
      -- no agent directory of pi's family: the daemon says which it looked for (as the CLI does)
      vim.notify("sessiontree: " .. result.hint .. " (set `agent_dir` in setup() to use another)", vim.log.levels.WARN)
    end
    if #sessions == 0 then
      vim.notify("sessiontree: no sessions for " .. params.cwd, vim.log.levels.WARN)
      return
    end
    -- several agents of pi's family listed (no agent_dir set): each says whose it is
    local dialects = {}
    for _, s in ipairs(sessions) do
      if require("sessiontree.agents").agent_of(s) == "pi" and type(s.dialect) == "string" then
        dialects[s.dialect] = true
      end
    end
    local mixed = vim.tbl_count(dialects) > 1
    vim.ui.select(sessions, {
      prompt = "Session",
      kind = "sessiontree_session",
      format_item = function(s)
        local title = M.session_name(s):gsub("%s+", " ")
        local badge = require("sessiontree.agents").badge(s)
        if badge == "" and mixed and type(s.dialect) == "string" then
          badge = "[" .. s.dialect .. "] "
        end
        return ("%s  %s%s  (%s)"):format(
          (s.modified or ""):sub(1, 16),
          badge,
          title:sub(1, 80),
          require("sessiontree.words").counted(s.messageCount or 0, "message")
        )
      end,
    }, function(choice)
      if choice then
        M.open(choice.path)
      end
    end)
  end)
end

--- Show the context the model sees from an entry, in a scratch split.
---@param opts? {state?: table, leaf_id?: string, on_show?: fun(buf: integer)}
function M.context(opts)
  opts = opts or {}
  local v = view()
  local state = opts.state or v.get()
  if not state then
    vim.notify("sessiontree: no session shown in this tab page", vim.log.levels.WARN)
    return
  end
  if v.busy(state) then
    return
  end
  local leaf_id = opts.leaf_id
  if not leaf_id then
    local row = v.current_row(state)
    leaf_id = row and row.id
  end
  local params = { session = state.session, llm = true }
  if leaf_id then
    params.leafId = leaf_id
  end
  client().request(client().methods.context, params, function(err, ctx)
    if err then
      return notify_err(err, "context")
    end
    local actions = require("sessiontree.actions")
    local lines = actions.context_lines(ctx, leaf_id)
    local buf = actions.show_scratch("sessiontree-context-" .. (leaf_id or "leaf"), lines, "markdown", "split")
    state.context_buf = buf
    if opts.on_show then
      opts.on_show(buf)
    end
  end)
end

--- Check the file of the session shown in this tab page (`session/doctor`, an addition)
--- and list the problems in a scratch split.
function M.doctor(opts)
  opts = opts or {}
  local state = view().get()
  if not state then
    vim.notify("sessiontree: no session shown in this tab page", vim.log.levels.WARN)
    return
  end
  if view().busy(state) then
    return
  end
  client().request(client().methods.doctor, { session = state.session }, function(err, result)
    if err then
      return notify_err(err, "doctor")
    end
    local problems = result.problems or {}
    local lines = { ("# %s: %d problem(s)"):format(state.path or state.title, #problems) }
    for _, p in ipairs(problems) do
      local where = p.line and (" line " .. p.line) or ""
      table.insert(lines, ("- %s%s: %s"):format(p.kind, where, p.message))
    end
    if #problems == 0 then
      table.insert(lines, "No problems found.")
    else
      table.insert(lines, "")
      table.insert(lines, "Repair from a shell with `sessiontree doctor --repair FILE` (the original is kept).")
    end
    local buf = require("sessiontree.actions").show_scratch("sessiontree-doctor", lines, "markdown", "split")
    state.doctor_buf = buf
    if opts.on_show then
      opts.on_show(buf)
    end
  end)
end

--- Search every session (`session/search`) and open the chosen hit's session drawn from it.
---@param text? string
---@param opts? table
function M.search(text, opts)
  return require("sessiontree.search").search(text, opts)
end

function M.close()
  view().close()
end

--- Reload the sidebar's rows (the current tab page's, or `state`'s): `:SessionTree refresh` and
--- the sidebar's `R`. A view drawn from a search hit goes back to the session's own leaf.
---@param state? table
function M.refresh(state)
  state = state or view().get()
  if state then
    if state.focus_id then
      -- back from a search hit's branch to the session's own leaf
      state.focus_id = nil
      return view().reload(state, { to_selected = true })
    end
    view().reload(state)
  end
end

M.subcommands = {
  toggle = function()
    M.toggle()
  end,
  open = function(args)
    M.open(args[1])
  end,
  sessions = function(args)
    -- :SessionTree sessions [all] [pi|claude|codex]
    local opts = {}
    for _, a in ipairs(args) do
      if a == "all" then
        opts.all = true
      elseif vim.tbl_contains(require("sessiontree.agents").FILTERS, a) then
        opts.agent = a
      end
    end
    M.sessions(opts)
  end,
  context = function()
    M.context()
  end,
  close = function()
    M.close()
  end,
  doctor = function()
    M.doctor()
  end,
  refresh = function()
    M.refresh()
  end,
  -- :SessionTree export [md|html|jsonl] [FILE] [subtree|dry-run|no-redact|redact]...
  export = function(args)
    local opts = { format = "md" }
    for _, a in ipairs(args) do
      if vim.tbl_contains(require("sessiontree.pictures").formats, a) then
        opts.format = a
      elseif a == "subtree" then
        opts.subtree = true
      elseif a == "dry-run" then
        opts.dry_run = true
      elseif a == "no-redact" then
        opts.redact = false
      elseif a == "redact" then
        opts.redact = true
      else
        opts.file = a
      end
    end
    M.export(opts)
  end,
  mark = function()
    M.mark()
  end,
  -- :SessionTree diff [A [B]]
  diff = function(args)
    M.diff({ a = args[1], b = args[2] })
  end,
  shared = function()
    require("sessiontree.shared").show()
  end,
  search = function(args)
    M.search(table.concat(args, " "))
  end,
  -- :SessionTree restore [ID] [files|conversation|both] [include-unknown] | restore undo
  restore = function(args)
    if args[1] == "undo" then
      return M.restore_undo()
    end
    local opts = {}
    for _, a in ipairs(args) do
      if vim.tbl_contains(require("sessiontree.restore").PARTS, a) then
        opts.part = a
      elseif a == "include-unknown" then
        opts.include_unknown = true
      else
        opts.id = a
      end
    end
    M.restore(opts)
  end,
}

--- See sessiontree.restore.
function M.restore(opts)
  return require("sessiontree.restore").open(opts)
end
function M.restore_undo(opts)
  return require("sessiontree.restore").undo(opts)
end

--- See sessiontree.pictures.
function M.export(opts)
  return require("sessiontree.pictures").export(opts)
end
function M.mark(opts)
  return require("sessiontree.pictures").mark(opts)
end
function M.diff(opts)
  return require("sessiontree.pictures").diff(opts)
end

--- The :SessionTree command.
function M.command(info)
  local args = info.fargs
  local sub = table.remove(args, 1) or "toggle"
  local fn = M.subcommands[sub]
  if not fn then
    vim.notify(
      ("sessiontree: unknown subcommand %q (one of: %s)"):format(
        sub,
        table.concat(vim.tbl_keys(M.subcommands), ", ")
      ),
      vim.log.levels.ERROR
    )
    return
  end
  fn(args)
end

--- Completion of :SessionTree.
function M.complete(arglead, cmdline)
  local words = vim.split(cmdline:sub(1, #cmdline), "%s+", { trimempty = false })
  if #words <= 2 then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    return vim.tbl_filter(function(n)
      return n:find(arglead, 1, true) == 1
    end, names)
  end
  if words[2] == "open" then
    return vim.fn.getcompletion(arglead, "file")
  elseif words[2] == "export" then
    return vim.tbl_filter(function(n)
      return n:find(arglead, 1, true) == 1
    end, { "md", "html", "jsonl", "subtree", "dry-run", "no-redact", "redact" })
  elseif words[2] == "restore" then
    return vim.tbl_filter(function(n)
      return n:find(arglead, 1, true) == 1
    end, { "undo", "files", "conversation", "both", "include-unknown" })
  elseif words[2] == "sessions" then
    return vim.tbl_filter(function(n)
      return n:find(arglead, 1, true) == 1
    end, { "all" })
  end
  return {}
end

return M
