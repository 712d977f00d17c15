---@mod sessiontree.shared Shared sessions: other machines' sessions in the shared store
---
--- `:SessionTree shared` opens a side window listing the sessions other machines keep in
--- the shared store (docs/shared-store.md), grouped by machine, with who ran each and in
--- which project. <CR> on a session opens it from the store in the sidebar, which follows
--- it live like a local file; `r` refreshes; `q` closes. Without a store (setup `store`,
--- else the daemon's $SESSIONTREE_STORE), or when it cannot be reached, the window says so;
--- local sessions keep working either way.

local M = {}

M.method_list = "session/list"
M.method_open = "session/openShared"

local function client()
  return require("sessiontree.client")
end

local function project(cwd)
  cwd = (cwd or ""):gsub("/+$", "")
  return cwd:match("([^/]+)$") or cwd
end

--- The window's lines for a `session/list` result, and the session of each line (by index).
---@param result table
---@return string[] lines, table<integer, table> sessions
function M.lines(result)
  local lines, at = {}, {}
  local store = result and result.store
  if not store then
    return { "No shared store configured", "  (setup { store = 'postgresql://...' }, or $SESSIONTREE_STORE)" }, at
  end
  if not store.reachable then
    return {
      "Shared store unreachable — local sessions keep working",
      "  " .. tostring(store.error or ""),
    },
      at
  end
  local by_machine, names = {}, {}
  for _, s in ipairs(result.sessions or {}) do
    if s["local"] == false then
      local m = s.machine or "?"
      if not by_machine[m] then
        by_machine[m] = {}
        table.insert(names, m)
      end
      table.insert(by_machine[m], s)
    end
  end
  table.sort(names)
  table.insert(lines, ("Shared sessions (this machine: %s)"):format(store.machine or "?"))
  if #names == 0 then
    table.insert(lines, "  none from other machines yet")
    return lines, at
  end
  local name = require("sessiontree").session_name
  for _, m in ipairs(names) do
    local list = by_machine[m]
    table.sort(list, function(a, b)
      return (a.modified or "") > (b.modified or "")
    end)
    table.insert(lines, ("%s (%d)"):format(m, #list))
    for _, s in ipairs(list) do
      local title = name(s):gsub("%s+", " "):sub(1, 60)
      table.insert(
        lines,
        ("  %s  %s · %s · %s"):format(title, s.user or "?", project(s.cwd), (s.modified or ""):sub(1, 16))
      )
      at[#lines] = s
    end
  end
  return lines, at
end

local state = { buf = nil, at = {} }

--- Open a shared session (a listed SessionInfo) in the sidebar.
---@param s table
---@param opts? {on_open?: fun(state)}
function M.open(s, opts)
  opts = opts or {}
  client().request(M.method_open, { sessionId = s.id }, function(err, result)
    if err then
      vim.notify("sessiontree: opening the shared session failed: " .. client().format_error(err), vim.log.levels.ERROR)
      return
    end
    local view = require("sessiontree.view")
    view.subscribe()
    local st = view.show(result, opts)
    if opts.on_open then
      opts.on_open(st)
    end
  end)
end

local function render(result)
  local lines, at = M.lines(result)
  state.at = at
  if not (state.buf and vim.api.nvim_buf_is_valid(state.buf)) then
    return
  end
  vim.bo[state.buf].modifiable = true
  vim.api.nvim_buf_set_lines(state.buf, 0, -1, false, lines)
  vim.bo[state.buf].modifiable = false
end

--- Fetch the list again and redraw the window.
---@param done? fun(lines: string[])
function M.refresh(done)
  client().request(M.method_list, { all = true }, function(err, result)
    if err then
      result = { store = { reachable = false, error = client().format_error(err) } }
    end
    render(result)
    if done and state.buf and vim.api.nvim_buf_is_valid(state.buf) then
      done(vim.api.nvim_buf_get_lines(state.buf, 0, -1, false))
    end
  end)
end

--- The session of the line under the cursor in the shared window, if any.
function M.session_at_cursor()
  return state.at[vim.api.nvim_win_get_cursor(0)[1]]
end

--- `:SessionTree shared`: the window of shared sessions.
---@param opts? {on_show?: fun(buf: integer, lines: string[]), on_open?: fun(state)}
function M.show(opts)
  opts = opts or {}
  if not (state.buf and vim.api.nvim_buf_is_valid(state.buf)) then
    state.buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(state.buf, "sessiontree://shared")
    vim.bo[state.buf].bufhidden = "hide"
    vim.bo[state.buf].filetype = "sessiontree-shared"
    local function map(lhs, fn, desc)
      vim.keymap.set("n", lhs, fn, { buffer = state.buf, nowait = true, desc = desc })
    end
    map("<CR>", function()
      local s = M.session_at_cursor()
      if s then
        M.open(s, { on_open = opts.on_open })
      end
    end, "open the shared session")
    map("r", function()
      M.refresh()
    end, "refresh the shared sessions")
    map("q", function()
      vim.cmd("close")
    end, "close")
  end
  local win = vim.fn.bufwinid(state.buf)
  if win == -1 then
    vim.cmd("botright 12split")
    vim.api.nvim_win_set_buf(0, state.buf)
  else
    vim.api.nvim_set_current_win(win)
  end
  M.refresh(function(lines)
    if opts.on_show then
      opts.on_show(state.buf, lines)
    end
  end)
  return state.buf
end

return M
