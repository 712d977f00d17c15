---@mod sessiontree.words Counts in words: "1 entry", "2 entries" (the daemon's rule, core/format/words.py)

local M = {}

local IRREGULAR = { entry = "entries", branch = "branches", match = "matches" }

--- `n` and `noun`, in the singular for one, else in the plural (`plural`, else the noun's own).
---@param n integer
---@param noun string
---@param plural? string
---@return string
function M.counted(n, noun, plural)
  if n == 1 then
    return n .. " " .. noun
  end
  return n .. " " .. (plural or IRREGULAR[noun] or (noun .. "s"))
end

return M
