---@mod sessiontree.view The sidebar: a scratch buffer rendering `session/view` rows
---
--- One sidebar per tab page. Its buffer holds a window of the rows (`first` is the offset
--- of `rows[1]` in the whole list): the window grows page by page as the cursor nears
--- either end, and is fetched again when the daemon reports a change.

local client = require("sessiontree.client")
local config = require("sessiontree.config")
local hl = require("sessiontree.highlight")

local M = {}

local FOOTER = {
  ["default"] = "",
  ["no-tools"] = " [no-tools]",
  ["user-only"] = " [user]",
  ["labeled-only"] = " [labeled]",
  ["all"] = " [all]",
}
M.FOOTER = FOOTER

---@class sessiontree.State
---@field tab integer
---@field buf integer
---@field win integer|nil
---@field session string handle from the daemon
---@field path string|nil
---@field title string
---@field filter string
---@field search string|nil
---@field rows table[] loaded rows
---@field first integer offset of rows[1] in the full list (0-based)
---@field total integer
---@field leaf_id string|nil
---@field selected_index integer|nil
---@field gen integer bumped on every reload; stale answers are dropped
---@field renders integer bumped after every render (tests and statuslines can watch it)
---@field loading boolean a reload is in flight
---@field paging boolean a page (more rows at either end) is being fetched

---@type table<integer, sessiontree.State>
local states = {}

--- The sidebar state of a tab page (default: the current one).
---@return sessiontree.State|nil
function M.get(tab)
  return states[tab or vim.api.nvim_get_current_tabpage()]
end

--- The sidebar state that owns a buffer.
---@return sessiontree.State|nil
function M.from_buf(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  for _, s in pairs(states) do
    if s.buf == buf then
      return s
    end
  end
end

--- Every open sidebar (all tab pages).
function M.all()
  return vim.tbl_values(states)
end

--- The connector art the sidebar draws for a row: the daemon's short form of a deep row's
--- art (`shortPrefix`, a depth marker and the last cells), unless `sidebar.full_art`.
---@param row table
---@return string
function M.art(row)
  if not config.get().sidebar.full_art and type(row.shortPrefix) == "string" then
    return row.shortPrefix
  end
  return row.prefix or ""
end

--- The full line the sidebar draws for a row (PROTOCOL.md, "Row").
---@param row table
---@return string
function M.line(row)
  local s = M.art(row)
  if row.onActivePath then
    s = s .. "• "
  end
  if row.label and row.label ~= "" then
    s = s .. "[" .. row.label .. "] "
  end
  return s .. (row.text or "")
end

local function win_valid(state)
  return state.win and vim.api.nvim_win_is_valid(state.win) and vim.api.nvim_win_get_buf(state.win) == state.buf
end
M.win_valid = win_valid

--- The row under the cursor, its global index (0-based) and buffer line.
---@return table|nil row, integer|nil index, integer|nil line
function M.current_row(state)
  if not win_valid(state) then
    return nil
  end
  local line = vim.api.nvim_win_get_cursor(state.win)[1]
  local row = state.rows[line]
  if not row then
    return nil
  end
  return row, state.first + line - 1, line
end

local function is_leaf_row(state, row, index)
  if row.isLeaf or (state.leaf_id ~= nil and row.id == state.leaf_id) then
    return true
  end
  -- the leaf is hidden (e.g. a label entry): mark its nearest visible ancestor
  return index == state.selected_index and row.onActivePath and not state.leaf_visible
end

local function highlight_row(state, row, index, lnum)
  local buf = state.buf
  local ns = hl.ns
  local col = 0
  local function mark(len, group)
    if len > 0 then
      vim.api.nvim_buf_set_extmark(buf, ns, lnum, col, { end_col = col + len, hl_group = group })
    end
    col = col + len
  end
  local art = M.art(row)
  local depth = art:match("^‹%d+› ")
  if depth then
    mark(#depth, "SessionTreeDepth")
  end
  mark(#art - (depth and #depth or 0), "SessionTreeGuide")
  if row.onActivePath then
    mark(#"• ", "SessionTreeActive")
  end
  local content = col
  if row.label and row.label ~= "" then
    mark(#row.label + 3, "SessionTreeLabel")
  end
  mark(#(row.text or ""), hl.text_group(row))
  if is_leaf_row(state, row, index) then
    vim.api.nvim_buf_set_extmark(buf, ns, lnum, 0, { line_hl_group = "SessionTreeLeafLine" })
    -- before the text, not after it: the end of a long row is cut off by the window
    local marker = config.get().sidebar.leaf_marker
    if marker ~= "" then
      vim.api.nvim_buf_set_extmark(buf, ns, lnum, content, {
        virt_text = { { marker, "SessionTreeLeaf" } },
        virt_text_pos = "inline",
      })
    end
  end
end

local function set_lines(state, start, stop, lines)
  vim.bo[state.buf].modifiable = true
  vim.api.nvim_buf_set_lines(state.buf, start, stop, false, lines)
  vim.bo[state.buf].modifiable = false
end

local function update_winbar(state)
  if not win_valid(state) then
    return
  end
  if not config.get().sidebar.winbar then
    vim.wo[state.win].winbar = ""
    return
  end
  local function esc(s)
    return (s:gsub("%%", "%%%%"))
  end
  local parts = { "%#SessionTreeFooter# " .. esc(state.title) }
  local suffix = FOOTER[state.filter] or (" [" .. state.filter .. "]")
  if suffix ~= "" then
    table.insert(parts, "%#SessionTreeFilter#" .. esc(suffix))
  end
  if state.search and state.search ~= "" then
    table.insert(parts, "%#SessionTreeSearch# /" .. esc(state.search) .. "/")
  end
  table.insert(parts, "%#SessionTreeFooter#%=" .. state.total .. " rows ")
  vim.wo[state.win].winbar = table.concat(parts, "")
end

--- The text of the footer (filter suffix, search, count), without highlight codes.
function M.footer(state)
  local s = state.title .. (FOOTER[state.filter] or "")
  if state.search and state.search ~= "" then
    s = s .. " /" .. state.search .. "/"
  end
  return s .. " " .. state.total .. " rows"
end

local function reindex(state)
  state.leaf_visible = false
  for _, row in ipairs(state.rows) do
    if row.isLeaf or (state.leaf_id ~= nil and row.id == state.leaf_id) then
      state.leaf_visible = true
      break
    end
  end
end

--- Draw all loaded rows.
function M.render(state)
  if not vim.api.nvim_buf_is_valid(state.buf) then
    return
  end
  reindex(state)
  local lines = {}
  for i, row in ipairs(state.rows) do
    lines[i] = M.line(row)
  end
  if #lines == 0 then
    lines = { state.search and "(no rows match /" .. state.search .. "/)" or "(no rows)" }
  end
  set_lines(state, 0, -1, lines)
  vim.api.nvim_buf_clear_namespace(state.buf, hl.ns, 0, -1)
  for i, row in ipairs(state.rows) do
    highlight_row(state, row, state.first + i - 1, i - 1)
  end
  update_winbar(state)
  state.renders = state.renders + 1
end

local function set_cursor_line(state, line)
  if win_valid(state) and #state.rows > 0 then
    line = math.max(1, math.min(line, #state.rows))
    vim.api.nvim_win_set_cursor(state.win, { line, 0 })
  end
end

local function center(state)
  if win_valid(state) then
    vim.api.nvim_win_call(state.win, function()
      vim.cmd("normal! zz")
    end)
  end
end

--- Put the cursor on the row with this id when it is loaded. Returns true when it was.
function M.focus_id(state, id)
  for i, row in ipairs(state.rows) do
    if row.id == id then
      set_cursor_line(state, i)
      return true
    end
  end
  return false
end

local function view_params(state, offset, limit)
  local p = { session = state.session, filter = state.filter, offset = offset, limit = limit }
  if state.search and state.search ~= "" then
    p.search = state.search
  end
  return p
end

local function report(err, what)
  vim.notify(("sessiontree: %s failed: %s"):format(what, client.format_error(err)), vim.log.levels.ERROR)
end

local function accept(state, result, offset)
  state.rows = result.rows or {}
  state.first = offset
  state.total = result.total or #state.rows
  state.leaf_id = result.leafId ~= vim.NIL and result.leafId or nil
  state.selected_index = result.selectedIndex
end

--- Fetch the rows again (after a change, a filter or a search) and redraw.
--- opts.keep_id: keep the cursor on this entry when it is still shown (default: the row
--- under the cursor); opts.to_selected: put the cursor on the leaf row instead.
---@param state sessiontree.State
---@param opts? {keep_id?: string, to_selected?: boolean, on_done?: fun()}
function M.reload(state, opts)
  opts = opts or {}
  -- A reload supersedes one still in flight (its answer is dropped); keep that one's
  -- intent (where the cursor goes) unless this one has its own.
  if state.loading and state.intent and opts.keep_id == nil and not opts.to_selected then
    opts = vim.tbl_extend("force", opts, state.intent)
  end
  state.intent = (opts.keep_id ~= nil or opts.to_selected)
      and { keep_id = opts.keep_id, to_selected = opts.to_selected }
    or nil
  local page = config.get().sidebar.page_size
  state.gen = state.gen + 1
  local gen = state.gen
  local offset, limit = 0, page
  if not opts.to_selected and #state.rows > 0 then
    offset, limit = state.first, math.max(page, #state.rows)
  end
  state.loading = true
  local function done()
    state.loading = false
    state.intent = nil
    if opts.on_done then
      opts.on_done()
    end
  end
  client.request(client.methods.view, view_params(state, offset, limit), function(err, result)
    if gen ~= state.gen or not vim.api.nvim_buf_is_valid(state.buf) then
      return
    end
    if err then
      state.loading = false
      -- the daemon restarted (or forgot the handle): open the file again, once
      if type(err) == "table" and err.code == -32001 and state.path and not opts.reopened then
        return client.request(client.methods.open, { path = state.path }, function(e2, res)
          if e2 then
            return report(e2, "session/open")
          end
          state.session = res.session
          M.reload(state, vim.tbl_extend("force", opts, { reopened = true }))
        end)
      end
      return report(err, "session/view")
    end
    local keep = opts.keep_id
    if keep == nil and not opts.to_selected then
      local row = M.current_row(state)
      keep = row and row.id
    end
    accept(state, result, offset)
    local sel = state.selected_index
    local loaded = function(i)
      return i ~= nil and i >= state.first and i < state.first + #state.rows
    end
    local found = false
    if keep then
      for _, row in ipairs(state.rows) do
        if row.id == keep then
          found = true
          break
        end
      end
    end
    if found or loaded(sel) or sel == nil or state.total == 0 then
      M.render(state)
      if found then
        M.focus_id(state, keep)
      elseif sel ~= nil then
        set_cursor_line(state, sel - state.first + 1)
        if opts.to_selected then
          center(state)
        end
      end
      return done()
    end
    -- the row to show is outside the loaded window: fetch a window around it
    local around = math.max(0, math.min(sel - math.floor(page / 2), state.total - page))
    client.request(client.methods.view, view_params(state, around, page), function(err2, result2)
      if gen ~= state.gen or not vim.api.nvim_buf_is_valid(state.buf) then
        return
      end
      if err2 then
        state.loading = false
        return report(err2, "session/view")
      end
      accept(state, result2, around)
      M.render(state)
      if state.selected_index then
        set_cursor_line(state, state.selected_index - state.first + 1)
        center(state)
      end
      done()
    end)
  end)
end

--- Request one page of rows for paging; `apply(rows, result)` runs only when the answer
--- still belongs to the rendered session (same generation, live buffer).
local function fetch_page(state, offset, limit, apply)
  local gen = state.gen
  state.paging = true
  client.request(client.methods.view, view_params(state, offset, limit), function(err, result)
    state.paging = false
    if gen ~= state.gen or not vim.api.nvim_buf_is_valid(state.buf) then
      return
    end
    if err then
      return report(err, "session/view")
    end
    state.total = result.total or state.total
    apply(result.rows or {})
    update_winbar(state)
    state.renders = state.renders + 1
  end)
end

--- Load the next (direction 1) or previous (-1) page when the cursor nears that end.
function M.maybe_page(state)
  if state.loading or state.paging or not win_valid(state) or #state.rows == 0 then
    return
  end
  local page = config.get().sidebar.page_size
  local line = vim.api.nvim_win_get_cursor(state.win)[1]
  local margin = math.max(10, vim.api.nvim_win_get_height(state.win))
  if line > #state.rows - margin and state.first + #state.rows < state.total then
    fetch_page(state, state.first + #state.rows, page, function(new)
      local base = #state.rows
      local lines = {}
      for i, row in ipairs(new) do
        state.rows[base + i] = row
        lines[i] = M.line(row)
      end
      set_lines(state, base, base, lines)
      for i, row in ipairs(new) do
        highlight_row(state, row, state.first + base + i - 1, base + i - 1)
      end
    end)
  elseif line <= margin and state.first > 0 then
    local offset = math.max(0, state.first - page)
    fetch_page(state, offset, state.first - offset, function(new)
      local lines = {}
      for i, row in ipairs(new) do
        lines[i] = M.line(row)
      end
      local cursor = win_valid(state) and vim.api.nvim_win_get_cursor(state.win)
      set_lines(state, 0, 0, lines)
      state.rows = vim.list_extend(vim.list_extend({}, new), state.rows)
      state.first = offset
      for i, row in ipairs(new) do
        highlight_row(state, row, offset + i - 1, i - 1)
      end
      if cursor then
        vim.api.nvim_win_set_cursor(state.win, { cursor[1] + #new, cursor[2] })
      end
    end)
  end
end

local timers = {}

--- Reload soon, gathering a burst of notifications into one request.
function M.schedule_reload(state)
  local key = state.buf
  if timers[key] then
    return
  end
  timers[key] = true
  vim.defer_fn(function()
    timers[key] = nil
    if states[state.tab] == state and vim.api.nvim_buf_is_valid(state.buf) then
      M.reload(state)
    end
  end, config.get().sidebar.debounce)
end

local function release_session(state)
  for _, s in pairs(states) do
    if s ~= state and s.session == state.session then
      return
    end
  end
  if client.get() then
    client.request(client.methods.close, { session = state.session }, function() end)
  end
end

local function open_window(state)
  local c = config.get().sidebar
  local cmd = (c.position == "right" and "botright" or "topleft") .. " vertical " .. c.width .. "split"
  vim.cmd(cmd)
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, state.buf)
  local wo = vim.wo[win]
  wo.winfixwidth = true
  wo.number = false
  wo.relativenumber = false
  wo.cursorline = true
  wo.wrap = false
  wo.list = false
  wo.spell = false
  wo.signcolumn = "no"
  wo.foldcolumn = "0"
  wo.foldenable = false
  state.win = win
end

local function create_buffer(tab)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.api.nvim_buf_set_name(buf, "sessiontree://" .. tab)
  return buf
end

local function nonempty(v)
  return type(v) == "string" and v ~= "" and v or nil
end

--- The name of a session: the daemon's `displayName` (one name for the sessions list and
--- the sidebar) when it sends one; else the header's title, else the file name.
---@param info table an OpenResult or a SessionInfo
---@return string
function M.title(info)
  local header = type(info.header) == "table" and info.header or {}
  local path = nonempty(info.path)
  return nonempty(info.displayName)
    or nonempty(header.title)
    or nonempty(info.title)
    or (path and vim.fn.fnamemodify(path, ":t:r"))
    or "in-memory session"
end

--- Show an opened session (an OpenResult) in the sidebar of the current tab page.
---@param open_result table
---@param opts? {focus?: boolean}
---@return sessiontree.State
function M.show(open_result, opts)
  opts = opts or {}
  local tab = vim.api.nvim_get_current_tabpage()
  local state = states[tab]
  local prev_win = vim.api.nvim_get_current_win()
  if state and vim.api.nvim_buf_is_valid(state.buf) then
    if state.session ~= open_result.session then
      release_session(state)
    end
  else
    local buf = create_buffer(tab)
    state = {
      tab = tab,
      buf = buf,
      rows = {},
      first = 0,
      total = 0,
      gen = 0,
      renders = 0,
      loading = false,
      paging = false,
      filter = config.get().sidebar.filter,
    }
    states[tab] = state
    require("sessiontree.actions").attach(buf)
    local group = vim.api.nvim_create_augroup("sessiontree_buf_" .. buf, { clear = true })
    vim.api.nvim_create_autocmd("BufWipeout", {
      group = group,
      buffer = buf,
      callback = function()
        if states[tab] and states[tab].buf == buf then
          release_session(states[tab])
          states[tab] = nil
        end
        pcall(vim.api.nvim_del_augroup_by_id, group)
      end,
    })
    vim.api.nvim_create_autocmd("CursorMoved", {
      group = group,
      buffer = buf,
      callback = function()
        M.maybe_page(state)
      end,
    })
    -- filetype last, so FileType autocmds see a complete buffer
    vim.bo[buf].filetype = "sessiontree"
  end
  state.session = open_result.session
  state.path = open_result.path
  state.title = M.title(open_result)
  state.rows, state.first, state.total = {}, 0, 0
  state.search = nil
  if not win_valid(state) then
    open_window(state)
  end
  if opts.focus == false and vim.api.nvim_win_is_valid(prev_win) then
    vim.api.nvim_set_current_win(prev_win)
  elseif win_valid(state) then
    vim.api.nvim_set_current_win(state.win)
  end
  M.reload(state, { to_selected = true })
  return state
end

--- Reopen the sidebar window of a tab page whose buffer still exists. Returns true if it did.
function M.reopen(tab)
  local state = states[tab or vim.api.nvim_get_current_tabpage()]
  if not state or not vim.api.nvim_buf_is_valid(state.buf) then
    return false
  end
  if not win_valid(state) then
    open_window(state)
    M.render(state)
  end
  vim.api.nvim_set_current_win(state.win)
  return true
end

--- Close the sidebar of a tab page (its buffer is wiped, the daemon's session released).
function M.close(tab)
  local state = states[tab or vim.api.nvim_get_current_tabpage()]
  if not state then
    return
  end
  if win_valid(state) and #vim.api.nvim_tabpage_list_wins(state.tab) > 1 then
    vim.api.nvim_win_close(state.win, true)
  end
  if vim.api.nvim_buf_is_valid(state.buf) then
    vim.api.nvim_buf_delete(state.buf, { force = true })
  end
  states[state.tab] = nil
end

--- Is the sidebar window of a tab page shown?
function M.is_open(tab)
  local state = states[tab or vim.api.nvim_get_current_tabpage()]
  return state ~= nil and win_valid(state)
end

-- Route the daemon's notifications to every sidebar showing that session.
local function for_session(fn)
  return function(params)
    for _, state in pairs(states) do
      if state.session == params.session then
        fn(state, params)
      end
    end
  end
end

local subscribed = false
function M.subscribe()
  if subscribed then
    return
  end
  subscribed = true
  local n = client.notifications
  local reload = for_session(function(state)
    M.schedule_reload(state)
  end)
  client.on(n.did_change, reload)
  client.on(n.did_navigate, reload)
  client.on(n.did_change_label, reload)
  client.on(n.did_reload, reload)
end

return M
