---@mod sessiontree.view.pager Which rows of the session a sidebar has loaded
---
--- The buffer holds a window of the rows (`first` is the offset of `rows[1]` in the whole
--- list): it is fetched around the leaf, grows page by page as the cursor nears either
--- end, and is fetched again when the daemon reports a change.

local client = require("sessiontree.client")
local config = require("sessiontree.config")
local render = require("sessiontree.view.render")
local window = require("sessiontree.view.window")
local preview = require("sessiontree.view.preview")

local M = {}

local function view_params(state, offset, limit)
  local p = { session = state.session, filter = state.filter, offset = offset, limit = limit }
  if state.search and state.search ~= "" then
    p.search = state.search
    -- a big session's search answers with the rows found so far; the rest comes with
    -- `session/didCompleteSearch` (view.lua reloads then)
    p.partial = true
  end
  if state.focus_id then
    p.leafId = state.focus_id
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
  state.searching = result.complete == false
  state.rows_search = state.search
end

--- Take an answer with a `window` (the rows around the selected row, past the first page):
--- the first page and the window when the window starts where the page ends, else the
--- window alone.
local function accept_window(state, result, offset)
  local rows, win = result.rows or {}, result.window
  if win.offset == offset + #rows then
    local joined = vim.list_extend(vim.list_extend({}, rows), win.rows or {})
    return accept(state, vim.tbl_extend("force", result, { rows = joined }), offset)
  end
  accept(state, vim.tbl_extend("force", result, { rows = win.rows or {} }), win.offset)
end

--- Draw the rows of a `session/view` answer: exact rows, so a preview drawn while the
--- session opened (view/preview.lua) is over.
local function draw(state)
  preview.finish(state)
  render.render(state)
end

--- Fetch the rows again (after a change, a filter or a search) and redraw.
--- opts.keep_id: keep the cursor on this entry when it is still shown (default: the row
--- under the cursor); opts.to_selected: put the cursor on the leaf row instead.
---@param state sessiontree.State
---@param opts? {keep_id?: string, to_selected?: boolean, on_done?: fun()}
function M.reload(state, opts)
  opts = opts or {}
  if not state.session then
    return -- a preview's rows: the open's first page comes with view.show
  end
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
  -- a new query's rows start over: the window of the rows before it means nothing there (and
  -- a search answered in part has no rows yet that far down)
  local keeps_window = not opts.to_selected and #state.rows > 0 and state.rows_search == state.search
  if keeps_window then
    offset, limit = state.first, math.max(page, #state.rows)
  end
  local params = view_params(state, offset, limit)
  if not keeps_window then
    -- the rows around the leaf come in the same answer when it lies past the first page
    params.selectedWindow = page
  end
  state.loading = true
  local function done()
    state.loading = false
    state.intent = nil
    if opts.on_done then
      opts.on_done()
    end
  end
  client.request(client.methods.view, params, function(err, result)
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
      local row = window.current_row(state)
      keep = row and row.id
    end
    local windowed = type(result.window) == "table"
    if windowed then
      accept_window(state, result, offset)
    else
      accept(state, result, offset)
    end
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
    -- (a search shown in part has no selected row: its first rows, when the window
    -- asked for lies past the rows found so far)
    local past_end = sel == nil and #state.rows == 0 and offset > 0
    if found or loaded(sel) or (sel == nil and not past_end) or state.total == 0 then
      draw(state)
      if found then
        window.focus_id(state, keep)
      elseif sel ~= nil then
        window.set_cursor_line(state, sel - state.first + 1)
        if opts.to_selected or windowed then
          window.center(state)
        end
      end
      return done()
    end
    -- the row to show is outside the loaded window (or a daemon from before
    -- `selectedWindow` sent none): fetch a window around it
    local around = sel and math.max(0, math.min(sel - math.floor(page / 2), state.total - page)) or 0
    client.request(client.methods.view, view_params(state, around, page), function(err2, result2)
      if gen ~= state.gen or not vim.api.nvim_buf_is_valid(state.buf) then
        return
      end
      if err2 then
        state.loading = false
        return report(err2, "session/view")
      end
      accept(state, result2, around)
      draw(state)
      if state.selected_index then
        window.set_cursor_line(state, state.selected_index - state.first + 1)
        window.center(state)
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
    state.searching = result.complete == false
    apply(result.rows or {})
    render.update_winbar(state)
    state.renders = state.renders + 1
  end)
end

--- Load the next (direction 1) or previous (-1) page when the cursor nears that end.
function M.maybe_page(state)
  if state.loading or state.paging or state.preview or not window.win_valid(state) or #state.rows == 0 then
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
        lines[i] = render.line(row)
      end
      render.set_lines(state, base, base, lines)
      for i, row in ipairs(new) do
        render.highlight_row(state, row, state.first + base + i - 1, base + i - 1)
      end
    end)
  elseif line <= margin and state.first > 0 then
    local offset = math.max(0, state.first - page)
    fetch_page(state, offset, state.first - offset, function(new)
      local lines = {}
      for i, row in ipairs(new) do
        lines[i] = render.line(row)
      end
      local cursor = window.win_valid(state) and vim.api.nvim_win_get_cursor(state.win)
      render.set_lines(state, 0, 0, lines)
      state.rows = vim.list_extend(vim.list_extend({}, new), state.rows)
      state.first = offset
      for i, row in ipairs(new) do
        render.highlight_row(state, row, offset + i - 1, i - 1)
      end
      if cursor then
        vim.api.nvim_win_set_cursor(state.win, { cursor[1] + #new, cursor[2] })
      end
    end)
  end
end

return M
