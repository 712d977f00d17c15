---@mod sessiontree.highlight Highlight groups of the sidebar
---
--- Every group is linked with `default = true`, so a colourscheme or the user's own
--- `:highlight` wins over these links.

local M = {}

M.ns = vim.api.nvim_create_namespace("sessiontree")

--- group name -> the group it links to by default
M.links = {
  SessionTreeUser = "Identifier",
  SessionTreeAssistant = "Normal",
  SessionTreeTool = "Comment",
  SessionTreeMeta = "Special",
  SessionTreeSummary = "String",
  SessionTreeLabel = "Label",
  SessionTreeGuide = "NonText",
  SessionTreeDepth = "Number",
  SessionTreeActive = "Title",
  SessionTreeLeaf = "CursorLineNr",
  SessionTreeLeafLine = "Visual",
  SessionTreeFooter = "WinBar",
  SessionTreeFilter = "Type",
  SessionTreeSearch = "Search",
  -- the restore preview (sessiontree.restore)
  SessionTreeRestoreTitle = "Title",
  SessionTreeRestoreWrite = "DiagnosticOk",
  SessionTreeRestoreConflict = "DiagnosticWarn",
  SessionTreeRestoreUnknown = "DiagnosticInfo",
}

function M.setup()
  for group, link in pairs(M.links) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
end

--- The highlight group for a row's display text, by entry kind.
---@param row table a `session/view` Row
---@return string
function M.text_group(row)
  if row.type == "message" then
    if row.role == "user" then
      return "SessionTreeUser"
    elseif row.role == "assistant" then
      return "SessionTreeAssistant"
    elseif row.role == "toolResult" or row.role == "bashExecution" or row.role == "pythonExecution" then
      return "SessionTreeTool"
    end
    return "SessionTreeMeta"
  elseif row.type == "branch_summary" or row.type == "compaction" then
    return "SessionTreeSummary"
  elseif row.type == "custom_message" then
    return "SessionTreeAssistant"
  end
  return "SessionTreeMeta"
end

return M
