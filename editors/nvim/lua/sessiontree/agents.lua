--- Other agents' sessions (Claude Code, Codex): their badge in the session picker and the
--- sidebar title, and "copy resume command", offered instead of navigation because those
--- sessions are read-only (docs/other-agents.md).
local M = {}

M.NAMES = { pi = "pi", claude = "Claude Code", codex = "Codex" }
--- The agents `:SessionTree sessions {agent}` accepts (`all`: every one).
M.FILTERS = { "all", "pi", "claude", "codex" }

--- The agent of a SessionInfo or OpenResult ("pi" when the daemon names none).
---@param s table
---@return string
function M.agent_of(s)
  return (type(s.agent) == "string" and s.agent ~= "") and s.agent or "pi"
end

--- The badge before a session's name: "[Claude Code] ", "[Codex] ", nothing for pi.
---@param s table
---@return string
function M.badge(s)
  local agent = M.agent_of(s)
  if agent == "pi" then
    return ""
  end
  return "[" .. (M.NAMES[agent] or agent) .. "] "
end

--- Put a resume command into the unnamed and the clipboard registers, and say so.
---@param command string|nil
---@param agent string
---@return boolean copied
function M.copy_resume(command, agent)
  if type(command) ~= "string" or command == "" then
    vim.notify("sessiontree: this session has no resume command", vim.log.levels.WARN)
    return false
  end
  vim.fn.setreg('"', command)
  if vim.fn.has("clipboard") == 1 then
    pcall(vim.fn.setreg, "+", command)
  end
  vim.notify(
    ("sessiontree: %s session, read-only; copied `%s` (resume it there)"):format(M.NAMES[agent] or agent, command),
    vim.log.levels.INFO
  )
  return true
end

--- Refuse a change to another agent's session before asking anything (a label, a branch):
--- says it is read-only and returns true; false for a session of pi's family.
---@param state table
---@param what string what was asked, e.g. "labels"
---@return boolean refused
function M.refuse_read_only(state, what)
  if not state or not state.agent or state.agent == "pi" then
    return false
  end
  local name = M.NAMES[state.agent] or state.agent
  vim.notify(
    ("sessiontree: this %s session is read-only: no %s here (resume it in %s)"):format(name, what, name),
    vim.log.levels.WARN
  )
  return true
end

--- The sidebar's action `copy_resume` (and what `navigate` does on a read-only session).
---@param state table
---@return boolean handled true when the shown session is another agent's
function M.offer_resume(state)
  if not state or not state.agent or state.agent == "pi" then
    return false
  end
  M.copy_resume(state.resume_command, state.agent)
  return true
end

return M
