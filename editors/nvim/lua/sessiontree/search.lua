---@mod sessiontree.search Search across every session (`session/search`)
---
--- `:SessionTree search [words]` asks the daemon's full-text index for the words, lists
--- the hits in a picker (Telescope when installed, with live results as you type; else
--- vim.ui.select) and opens the chosen hit's session in the sidebar drawn from the hit: its
--- row under the cursor, its branch the highlighted path (the view as if the hit were the
--- leaf, until `:SessionTree refresh`, a navigation or another session).

local M = {}

local function client()
  return require("sessiontree.client")
end

M.method = "session/search"
M.limit = 50

local ROLE = { user = "user", assistant = "asst", tool = "tool", other = "    " }

--- One line of a hit: time, role, the snippet with its matched words in «», the session.
--- opts.marks = false leaves the «» out (Telescope highlights the words typed itself: both
--- would show).
---@param hit table
---@param opts? {marks?: boolean}
---@return string
function M.format_hit(hit, opts)
  local open, close = "«", "»"
  if opts and opts.marks == false then
    open, close = "", ""
  end
  local snippet = hit.snippet or ""
  local out, pos = {}, 0
  -- highlights are code point ranges: convert through vim.str_byteindex
  for _, r in ipairs(hit.highlights or {}) do
    local a = vim.str_byteindex(snippet, "utf-32", r[1], false)
    local b = vim.str_byteindex(snippet, "utf-32", r[2], false)
    if a >= pos then
      table.insert(out, snippet:sub(pos + 1, a))
      table.insert(out, open .. snippet:sub(a + 1, b) .. close)
      pos = b
    end
  end
  table.insert(out, snippet:sub(pos + 1))
  local text = table.concat(out):gsub("%s+", " ")
  if #text > 160 then
    text = text:sub(1, 160) .. "…"
  end
  local when = type(hit.timestamp) == "string" and hit.timestamp:sub(1, 16):gsub("T", " ") or ""
  local name = type(hit.sessionName) == "string" and hit.sessionName or vim.fn.fnamemodify(hit.path, ":t")
  return ("%s  %s  %s  — %s"):format(when, ROLE[hit.role] or hit.role, text, name:sub(1, 60))
end

--- Open the hit's session with the sidebar drawn from the hit and the cursor on its row.
---@param hit table
---@param opts? {on_open?: fun(state)}
function M.land(hit, opts)
  opts = opts or {}
  require("sessiontree").open(hit.path, { focus_id = hit.entryId, on_open = opts.on_open })
end

--- Ask the daemon; `cb(err, result)`.
function M.query(text, cb)
  client().request(M.method, { query = text, limit = M.limit, paths = false }, cb)
end

local function pick_with_select(hits, opts)
  vim.ui.select(hits, {
    prompt = "Session search",
    kind = "sessiontree_search",
    format_item = M.format_hit,
  }, function(choice)
    if choice then
      M.land(choice, opts)
    end
  end)
end

local function telescope_available()
  return pcall(require, "telescope.pickers")
end

--- Telescope: the daemon is asked again as the prompt changes.
local function pick_with_telescope(initial, opts)
  local pickers = require("telescope.pickers")
  local finders = require("telescope.finders")
  local conf = require("telescope.config").values
  local actions = require("telescope.actions")
  local action_state = require("telescope.actions.state")
  pickers
    .new({}, {
      prompt_title = "Session search",
      default_text = initial or "",
      finder = finders.new_dynamic({
        fn = function(prompt)
          if not prompt or prompt:match("^%s*$") then
            return {}
          end
          local result = client().request_sync(M.method, { query = prompt, limit = M.limit, paths = false }, 5000)
          return result and result.hits or {}
        end,
        entry_maker = function(hit)
          local line = M.format_hit(hit, { marks = false })
          return { value = hit, display = line, ordinal = line }
        end,
      }),
      sorter = conf.generic_sorter({}),
      attach_mappings = function(bufnr)
        actions.select_default:replace(function()
          local entry = action_state.get_selected_entry()
          actions.close(bufnr)
          if entry then
            M.land(entry.value, opts)
          end
        end)
        return true
      end,
    })
    :find()
end

--- `:SessionTree search [words]`.
---@param text? string
---@param opts? {picker?: "select"|"telescope", on_open?: fun(state), on_results?: fun(hits)}
function M.search(text, opts)
  opts = opts or {}
  local use_telescope = opts.picker == "telescope" or (opts.picker == nil and telescope_available())
  if use_telescope then
    return pick_with_telescope(text, opts)
  end
  local function run(q)
    if not q or q:match("^%s*$") then
      return
    end
    M.query(q, function(err, result)
      if err then
        vim.notify("sessiontree: search failed: " .. client().format_error(err), vim.log.levels.ERROR)
        return
      end
      local hits = result.hits or {}
      if opts.on_results then
        opts.on_results(hits)
      end
      if #hits == 0 then
        vim.notify(("sessiontree: nothing matches %q"):format(q), vim.log.levels.WARN)
        return
      end
      pick_with_select(hits, opts)
    end)
  end
  if text and text ~= "" then
    return run(text)
  end
  vim.ui.input({ prompt = "Search sessions: " }, run)
end

return M
