--- Export and compare (`:SessionTree export`, `:SessionTree mark`, `:SessionTree diff`):
--- the path to the entry under the cursor (or its subtree) saved as Markdown, HTML or a
--- session file with secrets redacted by the daemon (`session/export`), and two entries
--- compared side by side in a diff tab (`session/diff`: the common ancestor, each side's
--- messages since it, the files each side's tool calls wrote or edited).

local M = {}

local function client()
  return require("sessiontree.client")
end
local function view()
  return require("sessiontree.view")
end

local function notify_err(err, what)
  vim.notify(("sessiontree: %s failed: %s"):format(what, client().format_error(err)), vim.log.levels.ERROR)
end

local function state_or_warn()
  local state = view().get()
  if not state then
    vim.notify("sessiontree: no session shown in this tab page", vim.log.levels.WARN)
  end
  return state
end

local function cursor_id(state)
  local row = view().current_row(state)
  return row and row.id
end

M.formats = { "md", "html", "jsonl" }

--- Whether `name` is a plain file name: `[A-Za-z0-9._-]` only, not starting with a dot or a
--- dash, no `..`, at most 120 bytes. The daemon suggests only such names; the client checks
--- again before it writes under one in the working directory (defence in depth).
---@param name any
---@return boolean
function M.is_plain_file_name(name)
  return type(name) == "string"
    and #name > 0
    and #name <= 120
    and name:match("^[%w_][%w._%-]*$") ~= nil
    and name:find("..", 1, true) == nil
end

--- Where an export is written: `file` (the user's own choice), else the daemon's suggested
--- name in the working directory, refused unless it is a plain file name.
---@param result table ExportResult
---@param file? string
---@return string|nil path, string|nil why
function M.target(result, file)
  if file then
    return vim.fn.fnamemodify(file, ":p")
  end
  if not M.is_plain_file_name(result.suggestedName) then
    return nil, ("the suggested name %s is not a plain file name; nothing was written"):format(vim.inspect(result.suggestedName))
  end
  return vim.fn.getcwd() .. "/" .. result.suggestedName
end

--- The line shown after an export: entries, and what was redacted per pattern.
---@param r table ExportResult
---@param where string
function M.report(r, where)
  local parts = {}
  for _, c in ipairs(r.redactions or {}) do
    table.insert(parts, ("%s %d"):format(c.pattern, c.count))
  end
  local red = not r.redacted and "not redacted"
    or (#parts > 0 and ("redacted: " .. table.concat(parts, ", ")) or "redaction found nothing")
  return ("sessiontree: exported %s to %s (%s)"):format(require("sessiontree.words").counted(r.entries, "entry"), where, red)
end

--- Export the path to the entry under the cursor (opts.subtree: its subtree).
---@param opts {format?: string, file?: string, subtree?: boolean, redact?: boolean, dry_run?: boolean, id?: string, state?: table, on_done?: fun(result: table, file?: string)}
function M.export(opts)
  opts = opts or {}
  local state = opts.state or state_or_warn()
  if not state or view().busy(state) then
    return
  end
  local format = opts.format or "md"
  if not vim.tbl_contains(M.formats, format) then
    vim.notify(("sessiontree: export format %q: one of md, html, jsonl"):format(format), vim.log.levels.ERROR)
    return
  end
  local id = opts.id or cursor_id(state)
  local params = { session = state.session, format = format, dryRun = opts.dry_run or false }
  if id then
    params[opts.subtree and "subtreeId" or "leafId"] = id
  end
  if opts.redact ~= nil then
    params.redact = opts.redact
  end
  client().request(client().methods.export, params, function(err, result)
    if err then
      return notify_err(err, "export")
    end
    if opts.dry_run then
      local lines = {
        ("# Would redact %d in %s"):format(#(result.findings or {}), require("sessiontree.words").counted(result.entries, "entry")),
      }
      for _, f in ipairs(result.findings or {}) do
        table.insert(lines, ("- %s in entry %s: %s"):format(f.pattern, f.entryId or "-", f.preview))
      end
      local buf = require("sessiontree.actions").show_scratch("sessiontree-redactions", lines, "markdown", "split")
      state.redactions_buf = buf
      if opts.on_done then
        opts.on_done(result)
      end
      return
    end
    local file, refused = M.target(result, opts.file)
    if not file then
      vim.notify("sessiontree: export: " .. refused, vim.log.levels.ERROR)
      return
    end
    local fh, why = io.open(file, "w")
    if not fh then
      vim.notify(("sessiontree: cannot write %s: %s"):format(file, why), vim.log.levels.ERROR)
      return
    end
    fh:write(result.content)
    fh:close()
    vim.notify(M.report(result, file), vim.log.levels.INFO)
    if opts.on_done then
      opts.on_done(result, file)
    end
  end)
end

--- Remember the entry under the cursor as side A of the next `:SessionTree diff`.
function M.mark(opts)
  opts = opts or {}
  local state = opts.state or state_or_warn()
  if not state or view().busy(state) then
    return
  end
  state.compare_mark = opts.id or cursor_id(state)
  vim.notify("sessiontree: marked " .. tostring(state.compare_mark) .. " for :SessionTree diff", vim.log.levels.INFO)
  return state.compare_mark
end

local function side_buffer(name, text)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n", { plain = true }))
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "markdown"
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.keymap.set("n", "q", "<cmd>tabclose<cr>", { buffer = buf, nowait = true, desc = "Close the comparison" })
  return buf
end

--- Compare two entries in a new tab page (two buffers in diff mode).
--- With ids a and b: those; with one: it and the entry under the cursor; with none: the
--- marked entry (`:SessionTree mark`) and the entry under the cursor.
---@param opts {a?: string, b?: string, state?: table, on_show?: fun(result: table, bufs: integer[])}
function M.diff(opts)
  opts = opts or {}
  local state = opts.state or state_or_warn()
  if not state or view().busy(state) then
    return
  end
  local a, b = opts.a, opts.b
  if a and not b then
    b = cursor_id(state)
  elseif not a then
    a, b = state.compare_mark, cursor_id(state)
  end
  if not a or not b then
    vim.notify(
      "sessiontree: diff needs two entries (:SessionTree mark one, then :SessionTree diff on the other)",
      vim.log.levels.WARN
    )
    return
  end
  client().request(client().methods.diff, { session = state.session, a = a, b = b }, function(err, result)
    if err then
      return notify_err(err, "diff")
    end
    vim.cmd("tabnew")
    local left_win = vim.api.nvim_get_current_win()
    local left = side_buffer(("sessiontree-diff://%s/A-%s"):format(state.session, a), result.a.document)
    vim.api.nvim_win_set_buf(left_win, left)
    vim.cmd("diffthis")
    vim.cmd("vsplit")
    local right_win = vim.api.nvim_get_current_win()
    local right = side_buffer(("sessiontree-diff://%s/B-%s"):format(state.session, b), result.b.document)
    vim.api.nvim_win_set_buf(right_win, right)
    vim.cmd("diffthis")
    for _, w in ipairs({ left_win, right_win }) do
      vim.wo[w].wrap = true
    end
    state.diff_bufs = { left, right }
    if opts.on_show then
      opts.on_show(result, { left, right })
    end
  end)
end

return M
