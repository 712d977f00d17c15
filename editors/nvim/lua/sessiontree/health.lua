-- :checkhealth sessiontree
local M = {}

function M.check()
  local health = vim.health
  health.start("sessiontree: Neovim")
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.10 or newer is needed")
  end

  health.start("sessiontree: configuration")
  local config = require("sessiontree.config")
  local ok, err = pcall(config.validate, config.get())
  if ok then
    health.ok("configuration is valid")
    local c = config.get()
    health.info(("agent dir: %s; sidebar: %s, width %d, filter %s"):format(
      c.agent_dir or "(daemon default: $PI_CODING_AGENT_DIR or ~/.xcsh/agent)",
      c.sidebar.position,
      c.sidebar.width,
      c.sidebar.filter
    ))
  else
    health.error(tostring(err))
    return
  end

  health.start("sessiontree: daemon")
  local client = require("sessiontree.client")
  local build = client.build_command()
  local run_build = ("Run `%s`: it makes %s/.venv with the daemon of this checkout (see :help sessiontree-install)"):format(
    build,
    client.plugin_root
  )
  local cmd_ok, cmd, source = pcall(client.resolve_cmd)
  if not cmd_ok or type(cmd) ~= "table" or not cmd[1] then
    health.error("the `cmd` option did not give an argv: " .. tostring(cmd))
    return
  end
  -- When `cmd` is set it decides; otherwise the build step's venv is used once it exists.
  local advice = source == "option" and { run_build .. ", then remove the `cmd` option", "Or fix the `cmd` option" }
    or { run_build }
  local exe = vim.fn.exepath(cmd[1])
  if exe == "" then
    health.error(("daemon not found: %q is not executable (%s)"):format(cmd[1], M.source_text(source)), advice)
    return
  end
  health.ok(("daemon found: %s (cmd: %s; %s)"):format(exe, table.concat(cmd, " "), M.source_text(source)))
  local result, werr = client.wait_ready()
  if not result then
    health.error("the daemon did not start: " .. tostring(werr), advice)
    return
  end
  local info = result.serverInfo or {}
  if info.name == "sessiontree" then
    health.ok(("daemon version: %s %s"):format(info.name, tostring(info.version)))
  else
    health.warn(("unexpected server: %s %s"):format(tostring(info.name), tostring(info.version)), advice)
  end
  local wanted = M.checkout_version()
  if info.name == "sessiontree" and wanted and M.older(info.version, wanted) then
    health.error(
      ("daemon too old: %s, this checkout of the plugin is %s"):format(tostring(info.version), wanted),
      advice
    )
  end
  if source == "build" then
    local built, head = M.built_commit(), M.head_commit()
    if built and head and built ~= head then
      health.warn(
        ("the daemon was built from commit %s; the checkout is now at %s"):format(built:sub(1, 12), head:sub(1, 12)),
        { ("Run `%s` to rebuild it (plugin managers do after an update when the build step is set)"):format(build) }
      )
    end
  end
  local caps = result.capabilities or {}
  local st = caps.experimental and caps.experimental.sessionTree
  if st and st.protocolVersion == 1 then
    health.ok("protocol version: 1")
  elseif st then
    health.error(
      "protocol version " .. tostring(st.protocolVersion) .. " (this plugin speaks version 1)",
      advice
    )
  else
    health.error("the server does not announce capabilities.experimental.sessionTree", advice)
  end
end

function M.source_text(source)
  return ({
    option = "the `cmd` option",
    build = "the build step's venv",
    path = "$PATH; no build step venv at " .. require("sessiontree.client").venv_daemon,
  })[source] or tostring(source)
end

--- The version of the Python package of this checkout (its pyproject.toml), or nil.
function M.checkout_version()
  local root = require("sessiontree.client").repo_root
  local ok, lines = pcall(vim.fn.readfile, root .. "/pyproject.toml", "", 40)
  if not ok then
    return nil
  end
  local in_project = false
  for _, line in ipairs(lines) do
    if line:match("^%[") then
      in_project = line == "[project]"
    elseif in_project then
      local v = line:match('^version%s*=%s*"([^"]+)"')
      if v then
        return v
      end
    end
  end
end

--- Is version a older than version b? Unparsable versions are never "older".
function M.older(a, b)
  local pa, pb = vim.version.parse(tostring(a or ""), { strict = false }), vim.version.parse(b, { strict = false })
  return pa ~= nil and pb ~= nil and vim.version.lt(pa, pb)
end

--- The commit the build step recorded for the venv's daemon, or nil.
function M.built_commit()
  local c = require("sessiontree.client")
  local ok, lines = pcall(vim.fn.readfile, vim.fs.dirname(vim.fs.dirname(c.venv_daemon)) .. "/sessiontree-build-commit")
  local commit = ok and lines[1] or ""
  return commit ~= "" and commit or nil
end

--- The commit the checkout is at, when the repository root is a git work tree of its own.
function M.head_commit()
  local root = require("sessiontree.client").repo_root
  if vim.fn.executable("git") ~= 1 then
    return nil
  end
  local r = vim.system({ "git", "-C", root, "rev-parse", "--show-toplevel", "HEAD" }, { text = true }):wait()
  if r.code ~= 0 then
    return nil
  end
  local top, head = r.stdout:match("^([^\n]+)\n(%x+)")
  if not top or vim.uv.fs_realpath(top) ~= vim.uv.fs_realpath(root) then
    return nil
  end
  return head
end

return M
