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
  local cmd_ok, cmd = pcall(client.cmd)
  if not cmd_ok or type(cmd) ~= "table" or not cmd[1] then
    health.error("the `cmd` option did not give an argv: " .. tostring(cmd))
    return
  end
  local exe = vim.fn.exepath(cmd[1])
  if exe == "" then
    health.error(("daemon not found: %q is not executable"):format(cmd[1]), {
      "Install sessiontree (pip install sessiontree) or set `cmd` in setup()",
    })
    return
  end
  health.ok(("daemon found: %s (cmd: %s)"):format(exe, table.concat(cmd, " ")))
  local result, werr = client.wait_ready()
  if not result then
    health.error("the daemon did not start: " .. tostring(werr))
    return
  end
  local info = result.serverInfo or {}
  if info.name == "sessiontree" then
    health.ok(("daemon version: %s %s"):format(info.name, tostring(info.version)))
  else
    health.warn(("unexpected server: %s %s"):format(tostring(info.name), tostring(info.version)))
  end
  local caps = result.capabilities or {}
  local st = caps.experimental and caps.experimental.sessionTree
  if st and st.protocolVersion == 1 then
    health.ok("protocol version: 1")
  elseif st then
    health.warn("protocol version " .. tostring(st.protocolVersion) .. " (this plugin speaks version 1)")
  else
    health.error("the server does not announce capabilities.experimental.sessionTree")
  end
end

return M
