-- Shared helpers of the specs: a fresh agent dir per test, the real daemon, waits.
local H = {}

H.plugin_root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
H.repo_root = vim.fn.fnamemodify(H.plugin_root, ":h:h")
H.fixtures = H.plugin_root .. "/tests/fixtures"
H.server = os.getenv("SESSIONTREE_SERVER") or (H.repo_root .. "/.venv/bin/sessiontree")
H.python = H.repo_root .. "/.venv/bin/python"

local extra_clients = {}

--- Wait for cond() (processing events meanwhile); fail with msg on timeout.
function H.wait(cond, msg, ms)
  local ok = vim.wait(ms or 8000, function()
    local good, res = pcall(cond)
    return good and res
  end, 10)
  assert(ok, "timed out waiting: " .. (msg or "condition"))
end

function H.tmpdir()
  local d = vim.fn.tempname()
  vim.fn.mkdir(d, "p")
  return vim.uv.fs_realpath(d)
end

--- Close every sidebar and extra window/tab (the daemon keeps running).
function H.close_sidebars()
  local view = package.loaded["sessiontree.view"]
  if view then
    for _, s in ipairs(view.all()) do
      pcall(view.close, s.tab)
    end
  end
  vim.cmd("silent! only! | silent! tabonly!")
end

local counter = 0
--- A fresh subdirectory of env.dir (inside the allowed roots) for one test's files.
function H.subdir(env)
  counter = counter + 1
  local d = env.dir .. "/t" .. counter
  vim.fn.mkdir(d, "p")
  return d
end

--- Stop the daemon(s) and close every sidebar, so the next test starts clean.
function H.teardown()
  H.close_sidebars()
  local client = package.loaded["sessiontree.client"]
  if client then
    client.stop()
  end
  for _, c in ipairs(extra_clients) do
    c:stop()
  end
  extra_clients = {}
  vim.wait(2000, function()
    return #vim.lsp.get_clients() == 0
  end, 10)
  vim.cmd("silent! only | silent! tabonly")
end

--- A fresh environment: a temp project dir (the cwd) with an agent dir inside it, and the
--- plugin configured to start the real daemon on it.
function H.setup(opts)
  H.teardown()
  local dir = H.tmpdir()
  local env = { dir = dir, agent = dir .. "/agent" }
  vim.fn.mkdir(env.agent, "p")
  vim.cmd.cd(dir)
  require("sessiontree").setup(vim.tbl_deep_extend("force", {
    cmd = { H.server, "serve" },
    agent_dir = env.agent,
    allowed_roots = { dir },
    sidebar = { debounce = 10 },
  }, opts or {}))
  return env
end

--- Copy a fixture into dir; return its path.
function H.fixture(name, dir)
  local src = H.fixtures .. "/" .. name
  local dst = dir .. "/" .. name
  vim.fn.writefile(vim.fn.readfile(src, "b"), dst, "b")
  return dst
end

--- Open a file in the sidebar and wait until it is drawn.
function H.open(path)
  local st
  require("sessiontree").open(path, {
    on_open = function(s)
      st = s
    end,
  })
  H.wait(function()
    return st and st.renders > 0 and not st.loading
  end, "sidebar drawn for " .. path, 15000)
  return st
end

--- Wait for the next render after fn() ran.
function H.after_render(state, fn, msg, ms)
  local before = state.renders
  fn()
  H.wait(function()
    return state.renders > before and not state.loading
  end, msg or "a redraw", ms)
end

function H.lines(state)
  return vim.api.nvim_buf_get_lines(state.buf, 0, -1, false)
end

--- The daemon's own rows for the sidebar's session (all of them), as full lines.
function H.daemon_lines(state, filter, search)
  local client = require("sessiontree.client")
  local res, err = client.request_sync(
    client.methods.view,
    { session = state.session, filter = filter or state.filter, search = search },
    10000
  )
  assert(not err, vim.inspect(err))
  local view = require("sessiontree.view")
  return vim.tbl_map(view.line, res.rows), res
end

function H.feed(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "x", false)
end

--- Answer the next vim.ui.input prompts with these strings (the plugin's only UI input).
function H.answer_inputs(answers)
  local orig = vim.ui.input
  local prompts = {}
  vim.ui.input = function(opts, on_confirm)
    table.insert(prompts, opts.prompt)
    local a = table.remove(answers, 1)
    if #answers == 0 then
      vim.ui.input = orig
    end
    on_confirm(a)
  end
  return prompts
end

function H.cursor_row(state)
  local view = require("sessiontree.view")
  return view.current_row(state)
end

function H.put_cursor_on(state, id)
  assert(require("sessiontree.view").focus_id(state, id), "row " .. id .. " is not shown")
end

--- The JSONL file decoded line by line.
function H.read_jsonl(path)
  local out = {}
  for _, line in ipairs(vim.fn.readfile(path)) do
    if line ~= "" then
      table.insert(out, vim.json.decode(line))
    end
  end
  return out
end

--- Append one JSON line to a file from another process (like an agent writing it).
function H.append_external(path, obj)
  local line = vim.json.encode(obj)
  local r = vim.system({ H.python, "-c", "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')", path, line }):wait()
  assert(r.code == 0, r.stderr)
end

--- A second, independent daemon on the same agent dir (to check what another process sees).
function H.second_daemon(env)
  local id = vim.lsp.start({
    name = "sessiontree-check",
    cmd = { H.server, "serve" },
    root_dir = env.dir,
    init_options = { agentDir = env.agent, allowedRoots = { env.dir } },
  }, {
    attach = false,
    reuse_client = function()
      return false
    end,
  })
  local c = assert(vim.lsp.get_client_by_id(id))
  table.insert(extra_clients, c)
  H.wait(function()
    return c.initialized
  end, "second daemon initialized")
  return {
    client = c,
    request = function(method, params)
      local r = c:request_sync(method, params, 10000)
      assert(r, "no answer to " .. method)
      assert(not r.err, vim.inspect(r.err))
      return r.result
    end,
  }
end

return H
