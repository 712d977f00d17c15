---@mod sessiontree.client The connection to the sessiontree daemon
---
--- One daemon per Neovim instance, started with |vim.lsp.start()| on first use and shared by
--- every tab page. Only the sessiontree protocol is spoken: custom requests go through
--- `client:request`, server notifications arrive through `handlers` and are fanned out to
--- the listeners registered with |sessiontree.client.on()|.

local config = require("sessiontree.config")

local M = {}

M.NAME = "sessiontree"

--- Method names of the protocol (PROTOCOL.md); the only place they are spelled.
M.methods = {
  list = "session/list",
  recent = "session/recent",
  open = "session/open",
  continue_recent = "session/continueRecent",
  close = "session/close",
  view = "session/view",
  entry = "session/entry",
  path = "session/path",
  navigate = "session/navigate",
  branch = "session/branch",
  branch_to_new_session = "session/branchToNewSession",
  set_label = "session/setLabel",
  labels = "session/labels",
  context = "session/context",
  append = "session/append",
  create = "session/create",
  -- additions of this project's daemon (docs/protocol.md)
  history = "session/history",
  back = "session/back",
  doctor = "session/doctor",
  graph = "session/graph",
  export = "session/export",
  diff = "session/diff",
  -- the rows around a big session's leaf from its file's end, while its open indexes it
  preview = "session/preview",
}

M.notifications = {
  did_change = "session/didChange",
  did_navigate = "session/didNavigate",
  did_change_label = "session/didChangeLabel",
  did_reload = "session/didReload",
  did_change_list = "session/didChangeList",
  did_complete_search = "session/didCompleteSearch",
}

local client_id ---@type integer|nil
local pending = {} ---@type function[] requests waiting for `initialized`
local listeners = {} ---@type table<string, function[]>

--- The raw `initialize` result of the running daemon (serverInfo, capabilities).
M.init_result = nil

--- Subscribe to a server notification. Returns a function that unsubscribes.
---@param method string
---@param fn fun(params: table)
---@return fun()
function M.on(method, fn)
  listeners[method] = listeners[method] or {}
  table.insert(listeners[method], fn)
  return function()
    for i, f in ipairs(listeners[method] or {}) do
      if f == fn then
        table.remove(listeners[method], i)
        return
      end
    end
  end
end

local function dispatch(method)
  return function(_, params)
    for _, fn in ipairs(vim.list_extend({}, listeners[method] or {})) do
      local ok, err = pcall(fn, params or {})
      if not ok then
        vim.notify("sessiontree: " .. method .. " handler failed: " .. tostring(err), vim.log.levels.ERROR)
      end
    end
  end
end

--- The plugin's runtimepath root (editors/nvim of the repository).
M.plugin_root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")
--- The repository root holding the Python package (when the plugin is a checkout).
M.repo_root = vim.fn.fnamemodify(M.plugin_root, ":h:h")
--- Where the build step puts the daemon: scripts/build.sh makes this venv.
M.venv_daemon = M.plugin_root .. "/.venv/bin/sessiontree"

--- The build step as a shell command line, to run by hand or from a plugin manager.
---@return string
function M.build_command()
  return "bash " .. vim.fn.shellescape(M.plugin_root .. "/scripts/build.sh")
end

--- The daemon's argv and where it came from: "option" (the `cmd` option), "build" (the
--- venv of the build step) or "path" (`sessiontree` looked up on $PATH).
--- The build step's venv wins over $PATH: it is made from this very checkout, so it speaks
--- the protocol of this plugin, where an older `pip install` on $PATH may not.
---@return string[] argv, string source
function M.resolve_cmd()
  local cmd = config.get().cmd
  if type(cmd) == "function" then
    return cmd(), "option"
  elseif cmd ~= nil then
    return cmd, "option"
  end
  if vim.fn.executable(M.venv_daemon) == 1 then
    return { M.venv_daemon, "serve" }, "build"
  end
  return { "sessiontree", "serve" }, "path"
end

local function resolve_cmd()
  return (M.resolve_cmd())
end

--- The daemon's argv as configured (resolved when `cmd` is a function or unset).
---@return string[]
function M.cmd()
  return resolve_cmd()
end

local function init_options()
  local c = config.get()
  return {
    agentDir = c.agent_dir,
    allowedRoots = c.allowed_roots,
    watch = c.watch,
    logLevel = c.log_level,
    preindex = c.preindex,
    store = c.store,
  }
end

--- The running client, or nil.
---@return vim.lsp.Client|nil
function M.get()
  if not client_id then
    return nil
  end
  local c = vim.lsp.get_client_by_id(client_id)
  if not c or (c.is_stopped and c:is_stopped()) then
    client_id = nil
    return nil
  end
  return c
end

--- Start the daemon unless it runs. Returns the client or nil and an error message.
---@return vim.lsp.Client|nil, string|nil
function M.ensure()
  local running = M.get()
  if running then
    return running
  end
  local cmd = resolve_cmd()
  if vim.fn.executable(cmd[1]) ~= 1 then
    return nil,
      ("daemon not found: %q is not executable (run %s, or set the `cmd` option; :checkhealth sessiontree)"):format(
        cmd[1],
        M.build_command()
      )
  end
  local handlers = {}
  for _, method in pairs(M.notifications) do
    handlers[method] = dispatch(method)
  end
  M.init_result = nil
  local lsp_config = {
    name = M.NAME,
    cmd = cmd,
    cmd_env = config.get().cmd_env,
    root_dir = vim.fn.getcwd(),
    init_options = init_options(),
    handlers = handlers,
    on_init = function(_, result)
      M.init_result = result
      local queued = pending
      pending = {}
      for _, run in ipairs(queued) do
        run()
      end
    end,
    on_exit = function(code, signal, id)
      if id == client_id then
        client_id = nil
        pending = {}
      end
      if code ~= 0 and signal ~= 15 then
        vim.schedule(function()
          vim.notify(("sessiontree: the daemon exited (code %s)"):format(code), vim.log.levels.WARN)
        end)
      end
    end,
  }
  local id
  if vim.fn.has("nvim-0.11") == 1 then
    id = vim.lsp.start(lsp_config, {
      attach = false,
      -- never attach to another server that happens to share the name and root
      reuse_client = function()
        return false
      end,
    })
  else
    -- 0.10: vim.lsp.start always attaches to the current buffer; start_client does not
    id = vim.lsp.start_client(lsp_config) ---@diagnostic disable-line: deprecated
  end
  if not id then
    return nil, "could not start the daemon: " .. table.concat(cmd, " ")
  end
  client_id = id
  return vim.lsp.get_client_by_id(id)
end

local function send(c, method, params, cb)
  if vim.fn.has("nvim-0.11") == 1 then
    return c:request(method, params, cb)
  end
  return c.request(method, params, cb) ---@diagnostic disable-line
end

--- Send a request. `cb(err, result)` runs on the main loop; `err` is a JSON-RPC error object
--- ({code, message, data}) or a string when the daemon could not be started.
---@param method string
---@param params table
---@param cb fun(err: table|string|nil, result: any)
function M.request(method, params, cb)
  local c, err = M.ensure()
  if not c then
    vim.schedule(function()
      cb(err, nil)
    end)
    return
  end
  local function run()
    local ok = send(c, method, params, function(e, result)
      cb(e, result)
    end)
    if not ok then
      cb("the daemon is not running", nil)
    end
  end
  if c.initialized then
    run()
  else
    table.insert(pending, run)
  end
end

--- Send a request and wait for the answer (for :checkhealth and scripts).
---@return any result, table|string|nil err
function M.request_sync(method, params, timeout)
  timeout = timeout or config.get().timeout
  local done, res, e = false, nil, nil
  M.request(method, params, function(err, result)
    done, res, e = true, result, err
  end)
  if not vim.wait(timeout, function()
    return done
  end, 10) then
    return nil, ("timed out after %d ms waiting for %s"):format(timeout, method)
  end
  return res, e
end

--- Wait until the daemon answered `initialize`. Returns the init result or nil, err.
function M.wait_ready(timeout)
  local c, err = M.ensure()
  if not c then
    return nil, err
  end
  timeout = timeout or config.get().timeout
  if not vim.wait(timeout, function()
    return M.init_result ~= nil or M.get() == nil
  end, 10) then
    return nil, ("the daemon did not answer initialize within %d ms"):format(timeout)
  end
  if not M.init_result then
    return nil, "the daemon exited during initialize"
  end
  return M.init_result
end

--- A readable message for an error returned by `request`.
function M.format_error(err)
  if type(err) == "table" then
    local msg = err.message or vim.inspect(err)
    if err.code then
      msg = ("%s (%s)"):format(msg, err.code)
    end
    return msg
  end
  return tostring(err)
end

--- Stop the daemon (it is restarted on next use).
function M.stop()
  local c = M.get()
  client_id = nil
  pending = {}
  M.init_result = nil
  if c then
    if vim.fn.has("nvim-0.11") == 1 then
      c:stop()
    else
      c.stop() ---@diagnostic disable-line
    end
  end
end

return M
