---@mod sessiontree.config Options of the sessiontree plugin
---
--- `setup(opts)` only stores options: nothing starts until a command or a keymap is used.
--- Every option has a default below; a user passes only what they change.

local M = {}

--- The defaults (also the documentation: see `:help sessiontree-config`).
---@class sessiontree.Config
M.defaults = {
  -- The daemon command. A list (argv) or a function returning one. The daemon speaks the
  -- sessiontree protocol over stdio; it is started once and shared by every tab page.
  -- nil: the daemon made by the build step (<plugin root>/.venv/bin/sessiontree, see
  -- scripts/build.sh) when it exists, else `sessiontree` on $PATH; with "serve".
  cmd = nil,
  -- Extra environment for the daemon process (e.g. { PI_CODING_AGENT_DIR = "/path" }).
  cmd_env = nil,
  -- Sent as initializationOptions. nil values are omitted, so the daemon's defaults apply:
  -- agent_dir: $PI_CODING_AGENT_DIR, else every agent dir of pi's family that exists is
  --   listed (~/.xcsh/agent, ~/.pi/agent, ~/.omp/agent and its profiles; new sessions: ~/.xcsh/agent)
  -- allowed_roots: the agent dir, the sessions root and the workspace folder (the cwd)
  -- watch: follow files that other processes append to
  agent_dir = nil,
  allowed_roots = nil,
  watch = true,
  log_level = nil,
  -- preindex: how many of the newest big sessions (32 MB and more) a listing shows the
  -- daemon indexes in the background, so that picking one shows its rows at once
  -- (docs/preindex.md); 0: none; nil: the daemon's default (3)
  preindex = nil,
  -- store: the shared session store, a postgresql:// URL or conninfo (docs/shared-store.md);
  -- nil: the daemon's $SESSIONTREE_STORE, else none. `:SessionTree shared` lists its sessions.
  store = nil,
  -- Milliseconds to wait for the daemon's answer in the places that must block
  -- (:checkhealth, starting the daemon).
  timeout = 5000,
  sidebar = {
    -- "left" or "right"
    position = "left",
    width = 50,
    -- Show the filter mode, the search and the row count in the sidebar's winbar.
    winbar = true,
    -- Rows fetched per `session/view` request; more are fetched as the cursor nears the
    -- end (or the start) of what is loaded.
    page_size = 400,
    -- Starting filter: "default", "no-tools", "user-only", "labeled-only" or "all".
    filter = "default",
    -- Milliseconds to gather bursts of notifications into one redraw.
    debounce = 30,
    -- Draw the full connector art of deep rows. false: art wider than 24 columns is cut
    -- to its last 4 cells behind a depth marker such as "‹63› " (the daemon's shortPrefix),
    -- so the text of every row starts within a few columns however deep it is.
    full_art = false,
    -- Shown before the text of the leaf row (which is also highlighted), so a long row
    -- cannot push it out of sight. "" shows the highlight only.
    leaf_marker = "▶ leaf ",
    -- Opening a session file of 32 MB or more also asks the daemon for the rows around its
    -- leaf from the file's end (`session/preview`), drawn at once while the open indexes
    -- the file; the exact rows replace them. false: wait for the exact rows.
    preview = true,
  },
  navigate = {
    -- Ask for an optional branch summary (vim.ui.input) before moving the leaf; an empty
    -- answer moves the leaf without a summary. false: never ask.
    prompt_summary = true,
  },
  preview = {
    -- "float" or "split"
    style = "float",
  },
  -- Buffer-local keymaps of the sidebar: key -> action name (see `:help sessiontree-actions`)
  -- or a function(state). Set a key to false to disable that default mapping.
  keymaps = {
    ["<CR>"] = "navigate",
    ["L"] = "label_set",
    ["dL"] = "label_clear",
    ["<Tab>"] = "filter_next",
    ["<S-Tab>"] = "filter_prev",
    -- f1..f5, not 1..5: bare digits are counts (14k, 3j)
    ["f1"] = "filter_default",
    ["f2"] = "filter_no_tools",
    ["f3"] = "filter_user_only",
    ["f4"] = "filter_labeled_only",
    ["f5"] = "filter_all",
    ["/"] = "search",
    ["<BS>"] = "search_clear",
    ["b"] = "branch",
    ["p"] = "preview",
    ["c"] = "context",
    ["gl"] = "jump_leaf",
    ["u"] = "back",
    -- restore the files to the entry under the cursor: a preview first (`:SessionTree restore`)
    ["r"] = "restore",
    ["R"] = "refresh",
    ["q"] = "close",
    ["g?"] = "help",
  },
  restore = {
    -- Buffer-local keymaps of the restore preview (`:SessionTree restore`): key -> action
    -- name (see `:help sessiontree-restore`) or a function(buf); false disables one.
    keymaps = {
      ["a"] = "apply",
      ["<CR>"] = "apply",
      ["i"] = "include_unknown",
      ["c"] = "conversation",
      ["u"] = "undo",
      ["q"] = "close",
      ["g?"] = "help",
    },
  },
}

M.FILTERS = { "default", "no-tools", "user-only", "labeled-only", "all" }

---@type sessiontree.Config
local current = vim.deepcopy(M.defaults)

local function is_list_of_strings(v)
  if type(v) ~= "table" then
    return false
  end
  for k, s in pairs(v) do
    if type(k) ~= "number" or type(s) ~= "string" then
      return false
    end
  end
  return #v > 0
end

local function one_of(list)
  return function(v)
    return vim.tbl_contains(list, v)
  end
end

--- Validate a full (merged) config. Raises an error naming the bad option.
---@param c sessiontree.Config
function M.validate(c)
  local function check(prefix, spec)
    for name, s in pairs(spec) do
      local ok, err
      if vim.fn.has("nvim-0.11") == 1 then
        ok, err = pcall(vim.validate, prefix .. name, s[1], s[2], s[3], s[4])
      else
        -- 0.10 only knows the table form; its third slot is "optional" or the message
        ok, err = pcall(vim.validate, { [prefix .. name] = { s[1], s[2], s[4] or s[3] } })
      end
      if not ok then
        error("sessiontree: invalid option " .. tostring(err), 0)
      end
    end
  end
  check("", {
    cmd = {
      c.cmd,
      function(v)
        return v == nil or type(v) == "function" or is_list_of_strings(v)
      end,
      false,
      "a non-empty list of strings, a function or nil",
    },
    cmd_env = { c.cmd_env, "table", true },
    agent_dir = { c.agent_dir, "string", true },
    store = { c.store, "string", true },
    allowed_roots = {
      c.allowed_roots,
      function(v)
        return v == nil or is_list_of_strings(v)
      end,
      false,
      "a list of directories",
    },
    watch = { c.watch, "boolean" },
    log_level = { c.log_level, "string", true },
    preindex = {
      c.preindex,
      function(v)
        return v == nil or (type(v) == "number" and v >= 0 and v <= 20 and v == math.floor(v))
      end,
      false,
      "an integer from 0 to 20",
    },
    timeout = {
      c.timeout,
      function(v)
        return type(v) == "number" and v > 0
      end,
      false,
      "a positive number of milliseconds",
    },
    sidebar = { c.sidebar, "table" },
    navigate = { c.navigate, "table" },
    preview = { c.preview, "table" },
    keymaps = { c.keymaps, "table" },
    restore = { c.restore, "table" },
  })
  check("sidebar.", {
    position = { c.sidebar.position, one_of({ "left", "right" }), false, '"left" or "right"' },
    width = {
      c.sidebar.width,
      function(v)
        return type(v) == "number" and v >= 10
      end,
      false,
      "a number >= 10",
    },
    winbar = { c.sidebar.winbar, "boolean" },
    page_size = {
      c.sidebar.page_size,
      function(v)
        return type(v) == "number" and v >= 10 and v == math.floor(v)
      end,
      false,
      "an integer >= 10",
    },
    filter = { c.sidebar.filter, one_of(M.FILTERS), false, table.concat(M.FILTERS, ", ") },
    debounce = { c.sidebar.debounce, "number" },
    full_art = { c.sidebar.full_art, "boolean" },
    leaf_marker = { c.sidebar.leaf_marker, "string" },
    preview = { c.sidebar.preview, "boolean" },
  })
  check("navigate.", { prompt_summary = { c.navigate.prompt_summary, "boolean" } })
  check("preview.", { style = { c.preview.style, one_of({ "float", "split" }), false, '"float" or "split"' } })
  local function check_keymaps(name, keymaps, descriptions)
    if type(keymaps) ~= "table" then
      error(("sessiontree: invalid option %s: expected a table"):format(name), 0)
    end
    for key, action in pairs(keymaps) do
      if type(key) ~= "string" then
        error(("sessiontree: invalid option %s: keys must be strings"):format(name), 0)
      end
      if not (action == false or type(action) == "function" or (type(action) == "string" and descriptions[action] ~= nil)) then
        error(
          ("sessiontree: invalid option %s[%q]: expected an action name, a function or false, got %s"):format(
            name,
            key,
            vim.inspect(action)
          ),
          0
        )
      end
    end
  end
  check_keymaps("keymaps", c.keymaps, require("sessiontree.actions").descriptions)
  check_keymaps("restore.keymaps", c.restore.keymaps, require("sessiontree.restore").descriptions)
end

-- Options whose default is nil, so they are absent from M.defaults but still known.
local NIL_DEFAULTS =
  { cmd = true, cmd_env = true, agent_dir = true, allowed_roots = true, log_level = true, preindex = true, store = true }

--- Merge user options over the defaults, validate and store them.
--- Unknown top-level keys are reported, so typos do not pass silently.
---@param opts table|nil
function M.set(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    error("sessiontree: setup() expects a table, got " .. type(opts), 0)
  end
  for k in pairs(opts) do
    if M.defaults[k] == nil and not NIL_DEFAULTS[k] then
      error(("sessiontree: unknown option %q"):format(tostring(k)), 0)
    end
  end
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- keymaps merge key by key (tbl_deep_extend already does); lists replace wholesale
  if opts.cmd ~= nil then
    merged.cmd = opts.cmd
  end
  if opts.allowed_roots ~= nil then
    merged.allowed_roots = opts.allowed_roots
  end
  M.validate(merged)
  current = merged
end

---@return sessiontree.Config
function M.get()
  return current
end

return M
