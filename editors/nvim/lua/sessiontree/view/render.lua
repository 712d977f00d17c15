---@mod sessiontree.view.render Rows into lines: text, highlights, the leaf marker, the winbar
---
--- Draws what a sidebar state holds; it never asks the daemon for anything.

local config = require("sessiontree.config")
local hl = require("sessiontree.highlight")
local window = require("sessiontree.view.window")

local M = {}

local FOOTER = {
  ["default"] = "",
  ["no-tools"] = " [no-tools]",
  ["user-only"] = " [user]",
  ["labeled-only"] = " [labeled]",
  ["all"] = " [all]",
}
M.FOOTER = FOOTER

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

--- Whether a row carries the leaf marker: the daemon says so (`marksLeaf`: the leaf's row, or
--- when the filter hides the leaf its nearest visible ancestor's, which names it in
--- `hiddenLeaf`; core/view/marks.py), the one rule every front end draws. An older daemon
--- sends only `isLeaf`.
---@param row table
---@return boolean
function M.marks_leaf(row)
  if row.marksLeaf ~= nil then
    return row.marksLeaf == true
  end
  return row.isLeaf == true
end

--- What the row that marks a hidden leaf says of it: "(leaf: TEXT)", or nil.
---@param row table
---@return string|nil
function M.leaf_note(row)
  if type(row.hiddenLeaf) == "string" then
    return "(leaf: " .. row.hiddenLeaf .. ")"
  end
end

--- Highlight one drawn row: `index` is its place in the whole list, `lnum` its buffer line (0-based).
function M.highlight_row(state, row, index, lnum)
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
  if M.marks_leaf(row) then
    vim.api.nvim_buf_set_extmark(buf, ns, lnum, 0, { line_hl_group = "SessionTreeLeafLine" })
    -- before the text, not after it: the end of a long row is cut off by the window
    local marker = config.get().sidebar.leaf_marker
    if marker ~= "" then
      vim.api.nvim_buf_set_extmark(buf, ns, lnum, content, {
        virt_text = { { marker, "SessionTreeLeaf" } },
        virt_text_pos = "inline",
      })
    end
    local note = M.leaf_note(row)
    if note then
      vim.api.nvim_buf_set_extmark(buf, ns, lnum, 0, {
        virt_text = { { " " .. note, "SessionTreeLeaf" } },
        virt_text_pos = "eol",
      })
    end
  end
end

function M.set_lines(state, start, stop, lines)
  vim.bo[state.buf].modifiable = true
  vim.api.nvim_buf_set_lines(state.buf, start, stop, false, lines)
  vim.bo[state.buf].modifiable = false
end

function M.update_winbar(state)
  if not window.win_valid(state) then
    return
  end
  if not config.get().sidebar.winbar then
    vim.wo[state.win].winbar = ""
    return
  end
  local function esc(s)
    return (s:gsub("%%", "%%%%"))
  end
  local p = state.preview
  if p then
    -- provisional rows while the session opens: the file name is cut first when narrow
    vim.wo[state.win].winbar = "%#SessionTreeFooter# Indexing %<"
      .. esc(p.name)
      .. "… "
      .. esc(M.preview_note(p))
    return
  end
  local parts = { "%#SessionTreeFooter# " .. esc(state.title) }
  local suffix = FOOTER[state.filter] or (" [" .. state.filter .. "]")
  if suffix ~= "" then
    table.insert(parts, "%#SessionTreeFilter#" .. esc(suffix))
  end
  if state.search and state.search ~= "" then
    table.insert(parts, "%#SessionTreeSearch# /" .. esc(state.search) .. "/")
  end
  table.insert(parts, "%#SessionTreeFooter#%=" .. M.count(state) .. " ")
  vim.wo[state.win].winbar = table.concat(parts, "")
end

--- What the status says of a preview's rows (view/preview.lua) after the file name.
function M.preview_note(p)
  return p.above and "showing its last entries, not the older ones yet" or "showing its last entries"
end

--- The text of the footer (filter suffix, search, count), without highlight codes; while
--- a big session opens, the status of its provisional rows.
function M.footer(state)
  if state.preview then
    return "Indexing " .. state.preview.name .. "… " .. M.preview_note(state.preview)
  end
  local s = state.title .. (FOOTER[state.filter] or "")
  if state.search and state.search ~= "" then
    s = s .. " /" .. state.search .. "/"
  end
  return s .. " " .. M.count(state)
end

--- The row count of the footer: "N rows", or "searching… N so far" while a search of a big
--- session is still going on (the daemon sends the rest with `session/didCompleteSearch`).
function M.count(state)
  if state.searching then
    return "searching… " .. state.total .. " so far"
  end
  return require("sessiontree.words").counted(state.total, "row")
end

--- Draw all loaded rows.
function M.render(state)
  if not vim.api.nvim_buf_is_valid(state.buf) then
    return
  end
  local lines = {}
  for i, row in ipairs(state.rows) do
    lines[i] = M.line(row)
  end
  if #lines == 0 then
    lines = { state.search and "(no rows match /" .. state.search .. "/)" or "(no rows)" }
  end
  M.set_lines(state, 0, -1, lines)
  vim.api.nvim_buf_clear_namespace(state.buf, hl.ns, 0, -1)
  for i, row in ipairs(state.rows) do
    M.highlight_row(state, row, state.first + i - 1, i - 1)
  end
  M.update_winbar(state)
  state.renders = state.renders + 1
end

return M
