---@mod sessiontree.view The sidebar: a scratch buffer rendering `session/view` rows
---
--- One sidebar per tab page. This module keeps the sidebars (one state per tab page) and
--- the functions the rest of the plugin calls; the work is split by job: view/render.lua
--- draws rows, view/pager.lua decides which rows are loaded, view/window.lua owns the
--- window, the buffer and the cursor.

local client = require("sessiontree.client")
local config = require("sessiontree.config")
local pager = require("sessiontree.view.pager")
local render = require("sessiontree.view.render")
local window = require("sessiontree.view.window")
local preview = require("sessiontree.view.preview")

local M = {}

M.FOOTER = render.FOOTER
M.art = render.art
M.line = render.line
M.footer = render.footer
M.render = render.render
M.win_valid = window.win_valid
M.current_row = window.current_row
M.focus_id = window.focus_id
M.reload = pager.reload
M.maybe_page = pager.maybe_page

local win_valid = window.win_valid

---@class sessiontree.State
---@field tab integer
---@field buf integer
---@field win integer|nil
---@field session string handle from the daemon
---@field path string|nil
---@field title string
---@field filter string
---@field search string|nil
---@field rows_search string|nil the search the loaded rows answer (a reload for another starts at the top)
---@field rows table[] loaded rows
---@field first integer offset of rows[1] in the full list (0-based)
---@field total integer
---@field leaf_id string|nil
---@field selected_index integer|nil
---@field gen integer bumped on every reload; stale answers are dropped
---@field renders integer bumped after every render (tests and statuslines can watch it)
---@field loading boolean a reload is in flight
---@field paging boolean a page (more rows at either end) is being fetched
---@field searching boolean the rows are those a search found so far (`partial`)
---@field preview table|nil set while the rows are a preview's (view/preview.lua): provisional
---@field ticket table|nil the preview of the open whose exact rows are still to come

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
  if not state.session then
    return -- provisional rows of a session still opening: no handle yet
  end
  for _, s in pairs(states) do
    if s ~= state and s.session == state.session then
      return
    end
  end
  if client.get() then
    client.request(client.methods.close, { session = state.session }, function() end)
  end
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

--- The sidebar of the current tab page, made (buffer, keymaps, autocmds) when it has none;
--- its window opened when closed and focused unless opts.focus is false.
---@param opts {focus?: boolean}
---@return sessiontree.State
local function sidebar(opts)
  local tab = vim.api.nvim_get_current_tabpage()
  local state = states[tab]
  local prev_win = vim.api.nvim_get_current_win()
  if not (state and vim.api.nvim_buf_is_valid(state.buf)) then
    local buf = window.create_buffer(tab)
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
  if not win_valid(state) then
    window.open_window(state)
  end
  if opts.focus == false and vim.api.nvim_win_is_valid(prev_win) then
    vim.api.nvim_set_current_win(prev_win)
  elseif win_valid(state) then
    vim.api.nvim_set_current_win(state.win)
  end
  return state
end

--- Show an opened session (an OpenResult) in the sidebar of the current tab page.
--- opts.ticket: the preview of this open (view/preview.lua), whose rows may be shown until
--- the first page of exact rows replaces them.
---@param open_result table
---@param opts? {focus?: boolean, focus_id?: string, ticket?: table}
---@return sessiontree.State
function M.show(open_result, opts)
  opts = opts or {}
  local state = sidebar(opts)
  if state.session ~= open_result.session then
    release_session(state)
  end
  preview.opened(state, opts.ticket)
  state.session = open_result.session
  state.path = open_result.path
  state.title = M.title(open_result)
  -- another agent's session: read-only, its agent named in the title
  state.agent = type(open_result.agent) == "string" and open_result.agent or nil
  state.resume_command = open_result.resumeCommand
  if state.agent then
    state.title = require("sessiontree.agents").badge(open_result) .. state.title
  end
  state.rows, state.first, state.total = {}, 0, 0
  state.search = nil
  -- a search hit: the view drawn as if it were the leaf (its branch the highlighted path)
  state.focus_id = opts.focus_id
  M.reload(state, { to_selected = true })
  return state
end

--- The sidebar of the current tab page handed to the preview of a session still opening
--- (view/preview.lua draws its rows): made when there is none; a session it showed is
--- released, and answers still in flight for it are dropped. It has no handle until the
--- open answers (`M.show`).
---@param ticket table
---@return sessiontree.State
function M.take(ticket)
  local state = sidebar({ focus = ticket.focus })
  release_session(state)
  state.session = nil
  state.gen = state.gen + 1
  state.loading, state.paging, state.intent = false, false, nil
  state.path = ticket.path
  state.title = vim.fn.fnamemodify(ticket.path, ":t:r")
  state.agent, state.resume_command = nil, nil
  state.search, state.focus_id = nil, nil
  return state
end

--- True (after saying so) when the sidebar shows the provisional rows of a session still
--- opening: nothing may be asked about them; the exact rows replace them in a moment.
---@param state sessiontree.State
---@return boolean
function M.busy(state)
  if not state.preview then
    return false
  end
  vim.notify(
    ("sessiontree: %s is still opening; its rows are provisional (try again in a moment)"):format(state.preview.name),
    vim.log.levels.INFO
  )
  return true
end

--- Reopen the sidebar window of a tab page whose buffer still exists. Returns true if it did.
function M.reopen(tab)
  local state = states[tab or vim.api.nvim_get_current_tabpage()]
  if not state or not vim.api.nvim_buf_is_valid(state.buf) then
    return false
  end
  if not win_valid(state) then
    window.open_window(state)
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
  client.on(
    n.did_navigate,
    for_session(function(state)
      state.focus_id = nil -- the leaf moved: the session's own branch again
      M.schedule_reload(state)
    end)
  )
  client.on(n.did_change_label, reload)
  client.on(n.did_reload, reload)
  -- a search shown in part has every row now: fetch them (the row under the cursor stays)
  client.on(
    n.did_complete_search,
    for_session(function(state)
      if state.searching then
        M.schedule_reload(state)
      end
    end)
  )
end

return M
