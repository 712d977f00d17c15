---@mod sessiontree.view.preview A big session's last rows while its open indexes it
---
--- Opening a big file takes the daemon a while (it indexes the whole file). Beside the
--- `session/open` of a file of `MIN_SIZE` bytes or more, `start` sends `session/preview`,
--- which draws the rows around the leaf from the file's last bytes without opening it. When
--- that answers first, the sidebar shows its rows, the cursor on the leaf's row and
--- "Indexing <file>…" in the winbar, until the first page of `session/view` after the open
--- replaces them (pager.lua calls `finish`). The rows are display-only: they have no handle
--- behind them, so the actions wait for the exact rows (view.busy).
---
--- A ticket stands for one open with a preview: it is finished when the exact rows are
--- drawn, when the open fails, or when another session is opened in its tab page; an answer
--- for a finished ticket is dropped.

local client = require("sessiontree.client")
local config = require("sessiontree.config")
local render = require("sessiontree.view.render")
local window = require("sessiontree.view.window")

local M = {}

--- Files this large (bytes) get a preview (the daemon's "big session", as for indexing
--- ahead); a smaller one's open and first page take under a quarter of a second cold, and a
--- preview would only flash before them.
M.MIN_SIZE = 32 * 1024 * 1024
--- The most rows the daemon answers a preview with.
M.MAX_ROWS = 2000

---@class sessiontree.PreviewTicket
---@field path string
---@field tab integer the tab page the open was started from
---@field filter string
---@field focus boolean|nil
---@field finished boolean|nil
---@field state sessiontree.State|nil the sidebar its rows were drawn in

---@type table<integer, sessiontree.PreviewTicket>
local latest = {}

--- Finish the ticket of a tab page (another session is being opened there).
local function supersede(tab)
  local t = latest[tab]
  if t then
    t.finished = true
    latest[tab] = nil
  end
end

--- Called right after `session/open` was sent for `path`: sends `session/preview` when the
--- file is big enough and the option is on. Returns the ticket to hand to view.show (or
--- `fail`), or nil when no preview was sent. Any earlier preview of this tab page is dropped.
---@param path string
---@param opts? {focus?: boolean, focus_id?: string}
---@return sessiontree.PreviewTicket|nil
function M.start(path, opts)
  opts = opts or {}
  local tab = vim.api.nvim_get_current_tabpage()
  supersede(tab)
  local c = config.get().sidebar
  -- a search hit's view is drawn from the hit, not from the leaf a preview would show
  if not c.preview or opts.focus_id then
    return nil
  end
  local stat = vim.uv.fs_stat(path)
  if not stat or stat.type ~= "file" or stat.size < M.MIN_SIZE then
    return nil
  end
  local shown = require("sessiontree.view").get(tab)
  ---@type sessiontree.PreviewTicket
  local ticket = {
    path = path,
    tab = tab,
    filter = shown and shown.filter or c.filter,
    focus = opts.focus,
  }
  latest[tab] = ticket
  local params = { path = path, filter = ticket.filter, limit = math.min(c.page_size, M.MAX_ROWS) }
  client.request(client.methods.preview, params, function(err, result)
    if err then
      -- an older daemon, a file it refuses: the exact rows come with the open as ever
      vim.lsp.log.debug("sessiontree: session/preview failed: " .. client.format_error(err))
      return
    end
    M.draw(ticket, result or {})
  end)
  return ticket
end

--- Draw a preview's answer, unless its open is over (exact rows drawn, failed, superseded)
--- or the user went to another tab page meanwhile.
---@param ticket sessiontree.PreviewTicket
---@param result table a PreviewResult
function M.draw(ticket, result)
  if ticket.finished or latest[ticket.tab] ~= ticket then
    return
  end
  if vim.api.nvim_get_current_tabpage() ~= ticket.tab then
    return
  end
  local rows = type(result.rows) == "table" and result.rows or {}
  if #rows == 0 then
    return -- the leaf is not in the bytes read (or not a session the daemon previews)
  end
  local view = require("sessiontree.view")
  local state = view.get(ticket.tab)
  if not (state and state.ticket == ticket and vim.api.nvim_buf_is_valid(state.buf)) then
    -- the open has not answered yet: the sidebar shows this session from now on
    state = view.take(ticket)
    state.ticket = ticket
  end
  ticket.state = state
  state.preview = {
    name = vim.fn.fnamemodify(ticket.path, ":t"),
    above = result.above == true,
  }
  state.rows, state.first, state.total = rows, 0, #rows
  state.leaf_id = result.leafId ~= vim.NIL and result.leafId or nil
  state.selected_index = result.selectedIndex ~= vim.NIL and result.selectedIndex or nil
  state.searching = false
  render.render(state)
  if state.selected_index then
    window.set_cursor_line(state, state.selected_index + 1)
    window.center(state)
  end
end

--- view.show calls this for every session it shows: the ticket of that open (if any) stays
--- live until its exact rows are drawn; any other preview of the tab page is dropped.
---@param state sessiontree.State
---@param ticket sessiontree.PreviewTicket|nil
function M.opened(state, ticket)
  if ticket and ticket.tab ~= state.tab then
    -- the user went to another tab page while it opened: no preview here, and a sidebar
    -- its rows were drawn in back there goes
    M.fail(ticket)
    ticket = nil
  end
  if ticket and ticket.finished then
    ticket = nil
  end
  if state.ticket and state.ticket ~= ticket then
    state.ticket.finished = true
  end
  if latest[state.tab] ~= ticket then
    supersede(state.tab)
  end
  state.ticket = ticket
  if not ticket then
    state.preview = nil
  end
end

--- The exact rows are being drawn (pager.lua): the preview of this sidebar is over.
---@param state sessiontree.State
function M.finish(state)
  if state.ticket then
    state.ticket.finished = true
    if latest[state.tab] == state.ticket then
      latest[state.tab] = nil
    end
    state.ticket = nil
  end
  state.preview = nil
end

--- The open failed: drop its preview, and the sidebar its rows were drawn in.
---@param ticket sessiontree.PreviewTicket|nil
function M.fail(ticket)
  if not ticket then
    return
  end
  ticket.finished = true
  if latest[ticket.tab] == ticket then
    latest[ticket.tab] = nil
  end
  local state = ticket.state
  if state and state.ticket == ticket then
    state.ticket, state.preview = nil, nil
    require("sessiontree.view").close(state.tab)
  end
end

return M
