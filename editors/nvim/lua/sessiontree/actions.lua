---@mod sessiontree.actions Named actions of the sidebar
---
--- Each action takes the sidebar state (see |sessiontree.view|). The `keymaps` option maps
--- keys to these names; `:help sessiontree-actions` lists them.

local M = {}

local FILTERS = { "default", "no-tools", "user-only", "labeled-only", "all" }

-- Lazily required: config.lua validates keymaps against this module.
local function client()
  return require("sessiontree.client")
end
local function view()
  return require("sessiontree.view")
end

local function notify_err(err, what)
  vim.notify(("sessiontree: %s failed: %s"):format(what, client().format_error(err)), vim.log.levels.ERROR)
end

local function row_or_warn(state)
  local row = view().current_row(state)
  if not row then
    vim.notify("sessiontree: no entry under the cursor", vim.log.levels.WARN)
  end
  return row
end

--- Short descriptions (help popup and keymap `desc`).
M.descriptions = {
  navigate = "Navigate here: move the leaf (optional summary)",
  label_set = "Set the label of this entry",
  label_clear = "Clear the label of this entry",
  filter_next = "Next filter mode",
  filter_prev = "Previous filter mode",
  filter_default = "Filter: default",
  filter_no_tools = "Filter: no-tools",
  filter_user_only = "Filter: user-only",
  filter_labeled_only = "Filter: labeled-only",
  filter_all = "Filter: all",
  search = "Search (empty clears)",
  search_clear = "Clear the search",
  branch = "Branch: a new session from this user message",
  preview = "Preview the entry as stored (JSON)",
  context = "Show what the model sees from this entry",
  jump_leaf = "Put the cursor on the leaf",
  back = "Undo the last leaf jump (navigation history)",
  refresh = "Refresh",
  close = "Close the sidebar",
  help = "Show the keymaps",
  copy_resume = "Copy the command that resumes this session in its agent (Claude Code, Codex)",
  -- no default key (map one in `keymaps`, e.g. E = "export"); :SessionTree export/mark/diff
  export = "Export the path to this entry (md, html or jsonl; redacted)",
  compare_mark = "Mark this entry for a comparison",
  compare = "Compare the marked entry with this one (a diff tab)",
  restore = "Restore files to here: a preview first",
  -- no default key (`u` in the restore preview, :SessionTree restore undo)
  restore_undo = "Undo the last restore of this session",
}

--- Move the leaf to the entry under the cursor (the /tree flow: `session/navigate`).
function M.navigate(state)
  if require("sessiontree.agents").offer_resume(state) then
    return -- another agent's session is read-only: resume it in its agent instead
  end
  local row = row_or_warn(state)
  if not row then
    return
  end
  local function go(summary)
    local params = { session = state.session, targetId = row.id }
    if summary and summary ~= "" then
      params.summarize = true
      params.summary = summary
    end
    client().request(client().methods.navigate, params, function(err, result)
      if err then
        return notify_err(err, "navigate")
      end
      if result and result.cancelled then
        return
      end
      if result and type(result.editorText) == "string" and result.editorText ~= "" then
        state.editor_text = result.editorText
        vim.notify("sessiontree: editor text: " .. result.editorText, vim.log.levels.INFO)
      end
      view().reload(state, { keep_id = row.id })
    end)
  end
  if require("sessiontree.config").get().navigate.prompt_summary then
    vim.ui.input({ prompt = "Branch summary (empty: none): " }, function(input)
      if input == nil then
        return -- cancelled with <Esc>
      end
      go(input)
    end)
  else
    go(nil)
  end
end

local function set_label(state, row, label)
  local params = { session = state.session, targetId = row.id }
  if label and label ~= "" then
    params.label = label
  end
  client().request(client().methods.set_label, params, function(err)
    if err then
      return notify_err(err, "setLabel")
    end
    view().reload(state, { keep_id = row.id })
  end)
end

function M.label_set(state)
  if require("sessiontree.agents").refuse_read_only(state, "labels") then
    return -- refused before the label is asked for
  end
  local row = row_or_warn(state)
  if not row then
    return
  end
  vim.ui.input({ prompt = "Label: ", default = row.label or "" }, function(input)
    if input == nil then
      return
    end
    set_label(state, row, input)
  end)
end

function M.label_clear(state)
  if require("sessiontree.agents").refuse_read_only(state, "labels") then
    return
  end
  local row = row_or_warn(state)
  if row then
    set_label(state, row, nil)
  end
end

--- Switch to a filter mode and redraw, keeping the cursor on the same entry when shown.
function M.set_filter(state, filter)
  state.filter = filter
  view().reload(state)
end

local function cycle(state, step)
  local i = 1
  for k, f in ipairs(FILTERS) do
    if f == state.filter then
      i = k
    end
  end
  M.set_filter(state, FILTERS[(i - 1 + step) % #FILTERS + 1])
end

function M.filter_next(state)
  cycle(state, 1)
end
function M.filter_prev(state)
  cycle(state, -1)
end
function M.filter_default(state)
  M.set_filter(state, "default")
end
function M.filter_no_tools(state)
  M.set_filter(state, "no-tools")
end
function M.filter_user_only(state)
  M.set_filter(state, "user-only")
end
function M.filter_labeled_only(state)
  M.set_filter(state, "labeled-only")
end
function M.filter_all(state)
  M.set_filter(state, "all")
end

function M.search(state)
  vim.ui.input({ prompt = "Search: ", default = state.search or "" }, function(input)
    if input == nil then
      return
    end
    state.search = input ~= "" and input or nil
    view().reload(state)
  end)
end

function M.search_clear(state)
  if state.search then
    state.search = nil
    view().reload(state)
  end
end

--- The /branch flow: a new session file holding the path up to this user message.
function M.branch(state)
  if require("sessiontree.agents").refuse_read_only(state, "branches") then
    return
  end
  local row = row_or_warn(state)
  if not row then
    return
  end
  if not (row.type == "message" and row.role == "user") then
    vim.notify("sessiontree: branch needs a user message under the cursor", vim.log.levels.WARN)
    return
  end
  client().request(
    client().methods.branch_to_new_session,
    { session = state.session, entryId = row.id },
    function(err, result)
      if err then
        return notify_err(err, "branchToNewSession")
      end
      -- The daemon may keep the same handle (its manager now points at the new file) or
      -- hand out a new one; show() handles both. The new file may not exist yet (the agent
      -- writes it with the first assistant message), so it is not opened by path.
      local s = view().show({
        session = result.session or state.session,
        path = result.path ~= vim.NIL and result.path or nil,
        displayName = result.displayName,
        header = {},
      })
      s.editor_text = result.selectedText
      if result.selectedText and result.selectedText ~= "" then
        vim.notify("sessiontree: new session; editor text: " .. result.selectedText, vim.log.levels.INFO)
      end
    end
  )
end

-- A compact pretty printer: vim.json.encode has no indentation before 0.12.
local function pretty(v, indent)
  indent = indent or ""
  local t = type(v)
  if v == vim.NIL or v == nil then
    return "null"
  elseif t == "table" then
    local inner = indent .. "  "
    if vim.tbl_isempty(v) then
      return vim.islist(v) and getmetatable(v) ~= vim._empty_dict_mt and "[]" or "{}"
    end
    local parts = {}
    if vim.islist(v) then
      for _, x in ipairs(v) do
        table.insert(parts, inner .. pretty(x, inner))
      end
      return "[\n" .. table.concat(parts, ",\n") .. "\n" .. indent .. "]"
    end
    local keys = vim.tbl_keys(v)
    table.sort(keys, function(a, b)
      -- the base fields first, like the file
      local order = { type = 1, id = 2, parentId = 3, timestamp = 4 }
      local oa, ob = order[a] or 9, order[b] or 9
      if oa ~= ob then
        return oa < ob
      end
      return tostring(a) < tostring(b)
    end)
    for _, k in ipairs(keys) do
      table.insert(parts, inner .. vim.json.encode(tostring(k)) .. ": " .. pretty(v[k], inner))
    end
    return "{\n" .. table.concat(parts, ",\n") .. "\n" .. indent .. "}"
  end
  return vim.json.encode(v)
end
M.pretty = pretty

--- A scratch buffer in a float ("float": 60% of the editor; "fit": sized to its lines) or
--- a split; `title` (default: the name) goes on a float's border.
local function show_scratch(name, lines, filetype, style, title)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  pcall(vim.api.nvim_buf_set_name, buf, name)
  local win
  title = " " .. (title or name) .. " "
  if style == "float" or style == "fit" then
    local width, height
    if style == "fit" then
      -- as wide as the longest line and as tall as the lines, so nothing wraps or hides;
      -- the editor (less the border and the command line) is the limit
      local widest = vim.fn.strdisplaywidth(title)
      for _, l in ipairs(lines) do
        widest = math.max(widest, vim.fn.strdisplaywidth(l))
      end
      width = math.max(1, math.min(widest, vim.o.columns - 2))
      height = math.max(1, math.min(#lines, vim.o.lines - vim.o.cmdheight - 2))
    else
      width = math.min(math.max(40, math.floor(vim.o.columns * 0.6)), vim.o.columns - 4)
      height = math.min(#lines, math.max(5, math.floor(vim.o.lines * 0.6)))
    end
    win = vim.api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = height,
      row = math.max(0, math.floor((vim.o.lines - vim.o.cmdheight - height - 2) / 2)),
      col = math.max(0, math.floor((vim.o.columns - width - 2) / 2)),
      style = "minimal",
      border = "rounded",
      title = title,
    })
  else
    vim.cmd("botright split")
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  end
  vim.wo[win].wrap = true
  if style == "fit" then
    -- wider than the editor: wrap at word boundaries and grow to the wrapped height
    vim.wo[win].linebreak = true
    vim.wo[win].breakindent = true
    local fits = vim.api.nvim_win_get_width(win) >= vim.fn.max(vim.tbl_map(vim.fn.strdisplaywidth, lines))
    vim.wo[win].wrap = not fits
    if not fits and vim.api.nvim_win_text_height then
      local need = vim.api.nvim_win_text_height(win, {}).all
      vim.api.nvim_win_set_config(win, { height = math.max(1, math.min(need, vim.o.lines - vim.o.cmdheight - 2)) })
    end
  end
  vim.keymap.set("n", "q", function()
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end, { buffer = buf, nowait = true, desc = "Close" })
  return buf, win
end
M.show_scratch = show_scratch

--- The entry under the cursor exactly as stored, in a float (or split) as JSON.
function M.preview(state)
  local row = row_or_warn(state)
  if not row then
    return
  end
  client().request(client().methods.entry, { session = state.session, id = row.id }, function(err, result)
    if err then
      return notify_err(err, "entry")
    end
    local lines = vim.split(pretty(result.entry), "\n", { plain = true })
    local style = require("sessiontree.config").get().preview.style
    state.preview_buf = show_scratch("sessiontree-entry-" .. row.id, lines, "json", style)
  end)
end

local function block_text(block)
  if type(block) ~= "table" then
    return { tostring(block) }
  end
  if block.type == "text" then
    return vim.split(block.text or "", "\n", { plain = true })
  elseif block.type == "thinking" then
    return { "(thinking) " .. (block.thinking or ""):gsub("\n", " ") }
  elseif block.type == "toolCall" then
    return { ("(tool call %s) %s"):format(block.name or "?", vim.json.encode(block.arguments or vim.empty_dict())) }
  elseif block.type == "image" then
    return { "(image " .. (block.mimeType or "") .. ")" }
  end
  return { vim.json.encode(block) }
end

--- Lines showing the messages the model would receive (`llmMessages`) and the state.
function M.context_lines(ctx, from_id)
  local lines = { "# Context from " .. (from_id or "the leaf") }
  local models = ctx.models and vim.json.encode(ctx.models) or "{}"
  table.insert(lines, ("thinking: %s   models: %s   mode: %s"):format(
    tostring(ctx.thinkingLevel ~= vim.NIL and ctx.thinkingLevel or "off"),
    models,
    tostring(ctx.mode or "none")
  ))
  local messages = ctx.llmMessages or ctx.messages or {}
  table.insert(lines, require("sessiontree.words").counted(#messages, "message"))
  for i, m in ipairs(messages) do
    table.insert(lines, "")
    table.insert(lines, ("## %d. %s"):format(i, m.role or "?"))
    local content = m.content
    if type(content) == "string" then
      vim.list_extend(lines, vim.split(content, "\n", { plain = true }))
    elseif type(content) == "table" then
      for _, b in ipairs(content) do
        vim.list_extend(lines, block_text(b))
      end
    end
  end
  return lines
end

--- What the model sees from the entry under the cursor (`session/context` with `llm`).
function M.context(state)
  local row = row_or_warn(state)
  if not row then
    return
  end
  require("sessiontree").context({ state = state, leaf_id = row.id })
end

function M.jump_leaf(state)
  if state.selected_index and view().focus_id(state, state.leaf_id or "") then
    return
  end
  view().reload(state, { to_selected = true })
end

--- Undo the last leaf jump made through the daemon (`session/back`, an addition).
function M.back(state)
  client().request(client().methods.back, { session = state.session }, function(err, result)
    if err then
      return notify_err(err, "back")
    end
    if result and result.cancelled then
      vim.notify("sessiontree: no earlier leaf to go back to", vim.log.levels.INFO)
      return
    end
    view().reload(state, { to_selected = true })
  end)
end

--- `R`: the same as `:SessionTree refresh` (one path: a search hit's view goes back to the
--- session's own leaf there too).
function M.refresh(state)
  require("sessiontree").refresh(state)
end

function M.close(state)
  view().close(state.tab)
end

--- The lines of a keymap help float: each key (sorted), its action's name and what it does.
--- The heading is the float's title, so every line is a keymap.
---@param keymaps table<string, string|function|false>
---@param descriptions table<string, string>
---@param width integer the action names' column
---@return string[]
function M.keymap_lines(keymaps, descriptions, width)
  local keys = vim.tbl_keys(keymaps)
  table.sort(keys)
  local lines = {}
  for _, key in ipairs(keys) do
    local action = keymaps[key]
    if action then
      local name = type(action) == "string" and action or "(function)"
      table.insert(lines, ("%-8s %-" .. width .. "s %s"):format(key, name, descriptions[name] or ""))
    end
  end
  return lines
end

function M.help(state)
  local lines = M.keymap_lines(require("sessiontree.config").get().keymaps, M.descriptions, 20)
  state.help_buf, state.help_win =
    show_scratch("sessiontree-help", lines, "sessiontreehelp", "fit", "sessiontree keymaps (q closes)")
end

--- Export the path to the entry under the cursor: the format is asked with vim.ui.select.
function M.export(state)
  local choices = {
    { label = "Markdown (redacted)", format = "md" },
    { label = "HTML (redacted)", format = "html" },
    { label = "Session file (JSONL, exact)", format = "jsonl" },
    { label = "Session file (JSONL, redacted)", format = "jsonl", redact = true },
    { label = "List what would be redacted", format = "md", dry_run = true },
  }
  vim.ui.select(choices, {
    prompt = "Export",
    format_item = function(c)
      return c.label
    end,
  }, function(choice)
    if choice then
      require("sessiontree.pictures").export({
        state = state,
        format = choice.format,
        redact = choice.redact,
        dry_run = choice.dry_run,
      })
    end
  end)
end

function M.compare_mark(state)
  require("sessiontree.pictures").mark({ state = state })
end

function M.compare(state)
  require("sessiontree.pictures").diff({ state = state })
end

--- Preview restoring the files to the entry under the cursor (|sessiontree-restore|).
function M.restore(state)
  require("sessiontree.restore").open({ state = state })
end

function M.restore_undo(state)
  require("sessiontree.restore").undo({ state = state })
end

-- What the keys do while the sidebar shows a big session's provisional rows (still
-- opening, no handle yet: view.busy says so for every other action).
local WHILE_OPENING = { close = true, help = true, refresh = true }

--- Set the buffer-local keymaps of a sidebar buffer from the `keymaps` option.
function M.attach(buf)
  local keymaps = require("sessiontree.config").get().keymaps
  for key, action in pairs(keymaps) do
    if action then
      local fn = type(action) == "function" and action or M[action]
      local desc = type(action) == "string" and ("sessiontree: " .. (M.descriptions[action] or action))
        or "sessiontree: custom action"
      vim.keymap.set("n", key, function()
        local state = view().from_buf(buf)
        if state and (WHILE_OPENING[action] or not view().busy(state)) then
          fn(state)
        end
      end, { buffer = buf, nowait = true, silent = true, desc = desc })
    end
  end
end

--- Copy the resume command of another agent's session (`claude --resume <id>`, `codex resume <id>`).
function M.copy_resume(state)
  if not require("sessiontree.agents").offer_resume(state) then
    vim.notify("sessiontree: a pi session: navigate it here instead (<CR>)", vim.log.levels.INFO)
  end
end

return M
