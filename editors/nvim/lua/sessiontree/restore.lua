---@mod sessiontree.restore Restore the files (and the conversation) to a node
---
--- `:SessionTree restore` (docs/checkpoints.md): the files the agent changed between the
--- current node and a node of any branch, brought to that node's content by the daemon's
--- three-way merge, so the person's own edits since are kept. A preview buffer ('filetype'
--- `diff`) lists each file with its status and why (a conflict is never written, an unknown
--- file is left alone unless chosen), the commands run on the way, and the exact unified
--- diffs; its keys (option `restore.keymaps`) restore, include the unknown files, add or
--- drop the conversation, undo the last restore, close. `session/restorePreview`,
--- `session/restore` (with the preview's token: a preview the disk changed under is refused
--- and made again), `session/restoreUndo`.

local M = {}

local function client()
  return require("sessiontree.client")
end
local function view()
  return require("sessiontree.view")
end

M.methods = {
  preview = "session/restorePreview",
  restore = "session/restore",
  undo = "session/restoreUndo",
  navigate = "session/navigate",
}

--- The parts a restore can take: files, the conversation (the leaf moves there), or both.
M.PARTS = { "files", "conversation", "both" }

--- JSON-RPC error of a preview that no longer holds (docs/protocol.md).
local STALE = -32004

--- What each key of the preview buffer can do (the `restore.keymaps` option's action names).
M.descriptions = {
  apply = "Restore: write what the preview shows",
  include_unknown = "Include the unknown files (or leave them alone again): preview again",
  conversation = "Restore the conversation too (or not): preview again",
  undo = "Undo the last restore (and the conversation's move it made)",
  close = "Close the preview",
  help = "Show the keymaps",
}

--- The statuses a restore writes.
M.WRITTEN = { change = true, create = true, delete = true }

--- How a status reads: the word in the list and what happens to the file.
M.FATE = {
  change = "brought to the target, your edits since kept",
  create = "created as at the target",
  delete = "deleted: the target has no such file",
  unchanged = "already as the restore would leave it",
  conflict = "not written: your changes and the restore meet (the diff shows the markers)",
  unknown = "left alone: the session does not tell its content",
  ["outside-workspace"] = "never written: outside the workspace folders",
}

--- The last restore made here, per session handle: what `undo` may move back.
local last = {}
--- The preview buffers: buf -> their context.
local previews = {}

local function notify_err(err, what)
  vim.notify(("sessiontree: %s failed: %s"):format(what, client().format_error(err)), vim.log.levels.ERROR)
end

local function plural(n, one)
  return ("%d %s%s"):format(n, one, n == 1 and "" or "s")
end

local function key_for(action)
  local keys = {}
  for key, a in pairs(require("sessiontree.config").get().restore.keymaps) do
    if a == action then
      table.insert(keys, key)
    end
  end
  table.sort(keys)
  return keys[1] and table.concat(keys, "/") or nil
end

--- Why a file has its status, in a line.
---@param f table a RestoreFile
---@param include_unknown boolean
---@return string
function M.explain(f, include_unknown)
  local why = (f.reason ~= nil and f.reason ~= "") and f.reason or (M.FATE[f.status] or "left as it is")
  if f.status == "conflict" then
    return why .. " · not written"
  elseif f.status == "unknown" then
    if include_unknown then
      return why .. " · nothing to write"
    end
    local k = key_for("include_unknown")
    return why .. (k and (" · left alone (" .. k .. " includes the unknown files)") or " · left alone")
  end
  return why
end

local function file_line(f, include_unknown)
  return ("#   %-10s %s  %s"):format(f.status, f.displayPath, M.explain(f, include_unknown))
end

--- Each file's unified diff after the listing, a blank line before each.
---@param lines string[]
---@param files table[] with `diff`
local function append_diffs(lines, files)
  for _, f in ipairs(files) do
    if f.diff and f.diff ~= "" then
      table.insert(lines, "")
      vim.list_extend(lines, vim.split((f.diff:gsub("\n$", "")), "\n", { plain = true }))
    end
  end
end

--- The preview buffer's lines for a `session/restorePreview` result, and the line of each
--- file's status (for its highlight).
---@param pv table RestorePreviewResult
---@param ctx {target_text?: string, include_unknown?: boolean, files: boolean}
---@return string[] lines, table<integer, string> statuses line -> status
function M.lines(pv, ctx)
  local lines, statuses = {}, {}
  local what = ctx.files and (pv.conversation and "the conversation and files" or "files") or "the conversation"
  local target = ctx.target_text and ctx.target_text ~= "" and (": " .. ctx.target_text:gsub("\n", " "):sub(1, 70)) or ""
  table.insert(lines, ("# Restore %s to %s%s"):format(what, pv.targetId, target))
  local from = pv.baseId ~= vim.NIL and pv.baseId or "(none)"
  local anc = pv.commonAncestorId ~= vim.NIL and pv.commonAncestorId or "(none)"
  table.insert(lines, ("# from %s (the node the files are at) · common ancestor %s"):format(from, anc))
  local keys = {}
  for _, a in ipairs({ "apply", "include_unknown", "conversation", "undo", "close", "help" }) do
    local k = key_for(a)
    if k then
      local word = ({
        apply = "restore",
        include_unknown = ctx.include_unknown and "leave unknown files alone" or "include unknown files",
        conversation = pv.conversation and "files only" or "conversation too",
        undo = "undo last restore",
        close = "close",
        help = "keys",
      })[a]
      table.insert(keys, k .. " " .. word)
    end
  end
  table.insert(lines, "# " .. table.concat(keys, " · "))
  table.insert(lines, "#")
  local files = pv.files or {}
  if ctx.files then
    local n, left = 0, 0
    for _, f in ipairs(files) do
      if M.WRITTEN[f.status] then
        n = n + 1
      elseif f.status ~= "unchanged" then
        left = left + 1
      end
    end
    if #files == 0 then
      table.insert(lines, "# No file the agent changed differs between the two nodes.")
    else
      table.insert(
        lines,
        ("# %s written%s:"):format(plural(n, "file"), left > 0 and (", " .. left .. " left as they are") or "")
      )
    end
    for _, f in ipairs(files) do
      table.insert(lines, file_line(f, ctx.include_unknown))
      statuses[#lines] = f.status
    end
  end
  if pv.conversation then
    table.insert(lines, ("# The conversation moves to %s (the leaf; no summary)."):format(pv.targetId))
  end
  if #(pv.commands or {}) > 0 then
    table.insert(lines, "#")
    table.insert(lines, "# Commands run on the way (the files they changed are not known to the restore):")
    for _, c in ipairs(pv.commands) do
      local at = c.entryId ~= vim.NIL and c.entryId or "?"
      table.insert(lines, ("#   %s  %s"):format(at, (c.command or ""):gsub("\n", " "):sub(1, 120)))
    end
  end
  append_diffs(lines, files)
  return lines, statuses
end

--- The lines after a restore: what was written and left, then the diffs it applied.
---@param res table RestoreResult
---@param ctx {target_id: string, target_text?: string}
---@return string[] lines, table<integer, string> statuses
function M.result_lines(res, ctx)
  local lines, statuses = {}, {}
  local target = ctx.target_text and ctx.target_text ~= "" and (": " .. ctx.target_text:gsub("\n", " "):sub(1, 70)) or ""
  local written = res.written or {}
  local head = ("# Restored %s to %s%s"):format(plural(#written, "file"), ctx.target_id, target)
  if res.backupId and res.backupId ~= vim.NIL then
    head = head .. (" (backup %s)"):format(res.backupId)
  end
  table.insert(lines, head)
  if res.newLeafId and res.newLeafId ~= vim.NIL then
    table.insert(lines, "# The conversation moved there.")
  end
  local k = key_for("undo")
  table.insert(lines, "# " .. (k and (k .. " undoes it · ") or "") .. (key_for("close") or "q") .. " closes")
  table.insert(lines, "#")
  for _, f in ipairs(written) do
    table.insert(lines, ("#   %-10s %s"):format(f.status, f.displayPath))
    statuses[#lines] = f.status
  end
  for _, f in ipairs(res.skipped or {}) do
    if f.status ~= "unchanged" then
      table.insert(lines, file_line(f, false))
      statuses[#lines] = f.status
    end
  end
  append_diffs(lines, written)
  return lines, statuses
end

--- The line said after an undo.
---@param res table RestoreUndoResult (or nil: no file undone)
---@param moved boolean the conversation moved back
function M.undone_message(res, moved)
  local parts = {}
  if res and res.backupId ~= nil and res.backupId ~= vim.NIL then
    table.insert(parts, ("put back %s"):format(plural(#(res.written or {}), "file")))
    local kept = {}
    for _, f in ipairs(res.skipped or {}) do
      table.insert(kept, f.displayPath)
    end
    if #kept > 0 then
      table.insert(parts, "changed since the restore, left as they are: " .. table.concat(kept, ", "))
    end
  end
  if moved then
    table.insert(parts, "the conversation is back where it was")
  end
  if #parts == 0 then
    return "sessiontree: there is no restore to undo"
  end
  return "sessiontree: undone: " .. table.concat(parts, "; ")
end

local STATUS_GROUP = {
  change = "SessionTreeRestoreWrite",
  create = "SessionTreeRestoreWrite",
  delete = "SessionTreeRestoreWrite",
  conflict = "SessionTreeRestoreConflict",
  unknown = "SessionTreeRestoreUnknown",
  ["outside-workspace"] = "SessionTreeRestoreUnknown",
}

local function draw(ctx, lines, statuses)
  local buf = ctx.buf
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  local ns = require("sessiontree.highlight").ns
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  vim.api.nvim_buf_set_extmark(buf, ns, 0, 0, { end_col = #lines[1], hl_group = "SessionTreeRestoreTitle" })
  for line, status in pairs(statuses) do
    local group = STATUS_GROUP[status]
    local col = lines[line]:find(status, 1, true)
    if group and col then
      vim.api.nvim_buf_set_extmark(buf, ns, line - 1, col - 1, { end_col = col - 1 + #status, hl_group = group })
    end
  end
  ctx.renders = (ctx.renders or 0) + 1
end

local function buffer_for(state, name)
  local buf = state.restore_buf
  if buf and vim.api.nvim_buf_is_valid(buf) then
    local win = vim.fn.bufwinid(buf)
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
    else
      vim.cmd("botright split")
      vim.api.nvim_win_set_buf(0, buf)
    end
    pcall(vim.api.nvim_buf_set_name, buf, name)
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  pcall(vim.api.nvim_buf_set_name, buf, name)
  -- at the bottom, across the sidebar too: most of the height for the diffs
  vim.cmd(("botright %dsplit"):format(math.max(10, math.floor((vim.o.lines - vim.o.cmdheight) * 0.6))))
  vim.api.nvim_win_set_buf(0, buf)
  vim.wo[0].wrap = false
  vim.bo[buf].filetype = "diff"
  state.restore_buf = buf
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      previews[buf] = nil
      if state.restore_buf == buf then
        state.restore_buf = nil
      end
    end,
  })
  M.attach(buf)
  return buf
end

local function state_or_warn(opts)
  local state = opts.state or view().get()
  if not state then
    vim.notify("sessiontree: no session shown in this tab page", vim.log.levels.WARN)
    return nil
  end
  if view().busy(state) then
    return nil
  end
  return state
end

local function refuse_conversation(state)
  -- another agent's session is read-only: its files can be restored, not its conversation
  return require("sessiontree.agents").offer_resume(state)
end

--- Ask the daemon for the preview of ctx and draw it.
local function preview(ctx, on_show)
  local params = {
    session = ctx.state.session,
    targetId = ctx.target_id,
    files = ctx.part ~= "conversation",
    conversation = ctx.part ~= "files",
    includeUnknown = ctx.include_unknown,
  }
  client().request(M.methods.preview, params, function(err, pv)
    if err then
      return notify_err(err, "restore preview")
    end
    ctx.preview, ctx.result, ctx.phase = pv, nil, "preview"
    if not ctx.buf then
      ctx.buf = buffer_for(ctx.state, "sessiontree-restore://" .. ctx.target_id)
      previews[ctx.buf] = ctx
    end
    draw(ctx, M.lines(pv, { target_text = ctx.target_text, include_unknown = ctx.include_unknown, files = params.files }))
    if on_show then
      on_show(ctx.buf, pv)
    end
  end)
end

--- Preview restoring to an entry: the files (default), the conversation, or both.
---@param opts? {state?: table, id?: string, part?: string, include_unknown?: boolean, on_show?: fun(buf: integer, preview: table)}
function M.open(opts)
  opts = opts or {}
  local state = state_or_warn(opts)
  if not state then
    return
  end
  local part = opts.part or "files"
  if not vim.tbl_contains(M.PARTS, part) then
    vim.notify(("sessiontree: restore %q: one of files, conversation, both"):format(part), vim.log.levels.ERROR)
    return
  end
  if part ~= "files" and refuse_conversation(state) then
    return
  end
  local id, text = opts.id, nil
  local row = view().current_row(state)
  if not id then
    if not row then
      vim.notify("sessiontree: no entry under the cursor", vim.log.levels.WARN)
      return
    end
    id = row.id
  end
  if row and row.id == id then
    text = row.text
  end
  local ctx = { state = state, target_id = id, target_text = text, part = part, include_unknown = opts.include_unknown or false }
  -- a new preview replaces the one the sidebar showed
  if state.restore_buf and previews[state.restore_buf] then
    ctx.buf = state.restore_buf
    buffer_for(state, "sessiontree-restore://" .. id)
    previews[ctx.buf] = ctx
  end
  preview(ctx, opts.on_show)
  return ctx
end

local function ctx_of(buf)
  return previews[buf or vim.api.nvim_get_current_buf()]
end

--- Write what the preview of `buf` shows (`session/restore` with its token).
---@param buf? integer
---@param on_done? fun(result: table|nil)
function M.apply(buf, on_done)
  local ctx = ctx_of(buf)
  if not ctx or ctx.phase ~= "preview" or not ctx.preview then
    vim.notify("sessiontree: nothing to restore here (preview again with :SessionTree restore)", vim.log.levels.WARN)
    return
  end
  local pv = ctx.preview
  local writes = false
  for _, f in ipairs(pv.files or {}) do
    writes = writes or M.WRITTEN[f.status] == true
  end
  if not writes and not pv.conversation then
    vim.notify("sessiontree: no file to write (conflicts and unknown files are left as they are)", vim.log.levels.INFO)
    return
  end
  local params = {
    session = ctx.state.session,
    targetId = ctx.target_id,
    files = writes,
    conversation = pv.conversation,
    includeUnknown = ctx.include_unknown,
    previewToken = pv.previewToken,
  }
  client().request(M.methods.restore, params, function(err, res)
    if err then
      if type(err) == "table" and err.code == STALE then
        vim.notify(
          "sessiontree: the files or the session changed since the preview; nothing was written (previewed again)",
          vim.log.levels.WARN
        )
        preview(ctx)
      else
        notify_err(err, "restore")
      end
      if on_done then
        on_done(nil)
      end
      return
    end
    ctx.result, ctx.phase = res, "restored"
    last[ctx.state.session] = res
    draw(ctx, M.result_lines(res, { target_id = ctx.target_id, target_text = ctx.target_text }))
    local n = #(res.written or {})
    vim.notify(
      ("sessiontree: restored %s to %s%s (%s undoes it)"):format(
        plural(n, "file"),
        ctx.target_id,
        (res.newLeafId and res.newLeafId ~= vim.NIL) and ", the conversation moved there" or "",
        key_for("undo") or ":SessionTree restore undo"
      ),
      vim.log.levels.INFO
    )
    if pv.conversation then
      view().reload(ctx.state, { to_selected = true })
    end
    if on_done then
      on_done(res)
    end
  end)
end

--- Undo the last restore of the sidebar's session: its files (`session/restoreUndo`) and,
--- when a restore made here moved the conversation and the leaf is still there, the
--- conversation. From a preview buffer that just restored, that restore only (a later one
--- is refused); from elsewhere it asks first.
---@param opts? {state?: table, buf?: integer, confirm?: boolean, on_done?: fun(result: table|nil)}
function M.undo(opts)
  opts = opts or {}
  local ctx = opts.buf and ctx_of(opts.buf) or nil
  local state = ctx and ctx.state or state_or_warn(opts)
  if not state then
    return
  end
  local made = ctx and ctx.result or last[state.session]
  local from_preview = ctx ~= nil and ctx.result ~= nil
  local function done(res)
    if opts.on_done then
      opts.on_done(res)
    end
  end
  client().request(M.methods.undo, { session = state.session, dryRun = true }, function(err, dry)
    if err then
      notify_err(err, "restore undo")
      return done(nil)
    end
    local dry_id = dry.backupId ~= vim.NIL and dry.backupId or nil
    local made_id = made and made.backupId ~= vim.NIL and made.backupId or nil
    if from_preview and made_id and dry_id ~= made_id then
      vim.notify("sessiontree: a later restore was made since; :SessionTree restore undo undoes that one", vim.log.levels.WARN)
      return done(nil)
    end
    if not from_preview and made and made_id ~= dry_id then
      made, made_id = nil, nil
    end
    local files = dry_id ~= nil and (not from_preview or made_id ~= nil)
    local back = made and made.oldLeafId and made.oldLeafId ~= vim.NIL and made.newLeafId == state.leaf_id and made.oldLeafId
      or nil
    if not files and not back then
      vim.notify(M.undone_message(nil, false), vim.log.levels.INFO)
      return done(dry)
    end
    local function run()
      local function finish(res)
        if back then
          client().request(M.methods.navigate, { session = state.session, targetId = back }, function(nerr)
            if nerr then
              notify_err(nerr, "navigate back")
            end
            view().reload(state, { to_selected = true })
            vim.notify(M.undone_message(res, not nerr), vim.log.levels.INFO)
            done(res)
          end)
        else
          vim.notify(M.undone_message(res, false), vim.log.levels.INFO)
          done(res)
        end
        last[state.session] = nil
        if ctx then
          ctx.phase = "undone"
          local lines = { "# " .. M.undone_message(res, back ~= nil):gsub("^sessiontree: ", "") }
          for _, f in ipairs(res and res.written or {}) do
            table.insert(lines, ("#   put back   %s"):format(f.displayPath))
          end
          draw(ctx, lines, {})
        end
      end
      if not files then
        return finish(nil)
      end
      client().request(M.methods.undo, { session = state.session }, function(uerr, res)
        if uerr then
          notify_err(uerr, "restore undo")
          return done(nil)
        end
        finish(res)
      end)
    end
    if from_preview or opts.confirm == false then
      return run()
    end
    local names = {}
    for _, f in ipairs(files and dry.written or {}) do
      table.insert(names, f.displayPath)
    end
    local what = #names > 0 and ("put back " .. table.concat(names, ", ")) or ""
    if back then
      what = what .. (what ~= "" and " and " or "") .. "move the conversation back"
    end
    vim.ui.select({ "Undo", "Cancel" }, { prompt = ("Undo the last restore (%s)?"):format(what) }, function(choice)
      if choice == "Undo" then
        run()
      else
        done(nil)
      end
    end)
  end)
end

--- Preview again with the unknown files included (or left alone again).
function M.include_unknown(buf)
  local ctx = ctx_of(buf)
  if ctx and ctx.phase == "preview" then
    ctx.include_unknown = not ctx.include_unknown
    preview(ctx)
  end
end

--- Preview again with the conversation added (or dropped).
function M.conversation(buf)
  local ctx = ctx_of(buf)
  if not (ctx and ctx.phase == "preview") then
    return
  end
  local to = ({ files = "both", both = "files", conversation = "both" })[ctx.part]
  if to ~= "files" and refuse_conversation(ctx.state) then
    return
  end
  ctx.part = to
  preview(ctx)
end

function M.close(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 and #vim.api.nvim_list_wins() > 1 then
    vim.api.nvim_win_close(win, true)
  elseif vim.api.nvim_buf_is_valid(buf) then
    vim.api.nvim_buf_delete(buf, { force = true })
  end
end

function M.help(buf)
  local actions = require("sessiontree.actions")
  local lines = actions.keymap_lines(require("sessiontree.config").get().restore.keymaps, M.descriptions, 16)
  local ctx = ctx_of(buf)
  local help = actions.show_scratch("sessiontree-restore-help", lines, "sessiontreehelp", "fit", "restore keymaps (q closes)")
  if ctx then
    ctx.help_buf = help
  end
end

--- The actions of the preview buffer's keys, by name.
M.actions = {
  apply = function(buf)
    M.apply(buf)
  end,
  include_unknown = M.include_unknown,
  conversation = M.conversation,
  undo = function(buf)
    local ctx = ctx_of(buf)
    M.undo({ buf = ctx and ctx.result and buf or nil, state = ctx and ctx.state })
  end,
  close = M.close,
  help = M.help,
}

--- Set the buffer-local keymaps of a preview buffer from the `restore.keymaps` option.
function M.attach(buf)
  for key, action in pairs(require("sessiontree.config").get().restore.keymaps) do
    if action then
      local fn = type(action) == "function" and action or M.actions[action]
      local desc = type(action) == "string" and ("sessiontree restore: " .. (M.descriptions[action] or action))
        or "sessiontree restore: custom action"
      vim.keymap.set("n", key, function()
        fn(buf)
      end, { buffer = buf, nowait = true, silent = true, desc = desc })
    end
  end
end

--- The preview context of a buffer (tests, statuslines): state, target, part, preview, result.
M.context = ctx_of

return M
