---@mod sessiontree.view.window The sidebar's window and buffer, and its cursor
---
--- Everything here asks Neovim about (or changes) the window and buffer of one sidebar
--- state; what the lines say is render.lua's business, which rows are loaded pager.lua's.

local config = require("sessiontree.config")

local M = {}

--- Is the state's window alive and still showing its buffer?
function M.win_valid(state)
  return state.win and vim.api.nvim_win_is_valid(state.win) and vim.api.nvim_win_get_buf(state.win) == state.buf
end
local win_valid = M.win_valid

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

function M.set_cursor_line(state, line)
  if win_valid(state) and #state.rows > 0 then
    line = math.max(1, math.min(line, #state.rows))
    vim.api.nvim_win_set_cursor(state.win, { line, 0 })
  end
end

function M.center(state)
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
      M.set_cursor_line(state, i)
      return true
    end
  end
  return false
end

function M.open_window(state)
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

function M.create_buffer(tab)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.api.nvim_buf_set_name(buf, "sessiontree://" .. tab)
  return buf
end

return M
