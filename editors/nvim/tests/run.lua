-- Run the busted specs inside Neovim (the "nlua" pattern):
--   nvim --headless -u NONE -i NONE -l tests/run.lua -o tests/output.lua tests/spec
-- Debian's lua-busted is a Lua 5.1 package, which LuaJIT loads as is.
package.path = "/usr/share/lua/5.1/?.lua;/usr/share/lua/5.1/?/init.lua;" .. package.path
package.cpath = "/usr/lib/x86_64-linux-gnu/lua/5.1/?.so;/usr/lib/lua/5.1/?.so;" .. package.cpath
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.rtp:prepend(here)
package.path = here .. "/tests/?.lua;" .. package.path
vim.cmd("runtime plugin/sessiontree.lua")
-- messages of the plugin go to stderr on their own line, so they do not glue onto results
vim.notify = function(msg, level)
  io.stderr:write(("  [notify %s] %s\n"):format(level or "", msg))
end
-- busted raises a bare error() to exit non-zero under Lua 5.1; turn that into an exit code
local ok = pcall(require("busted.runner"), { standalone = false })
os.exit(ok and 0 or 1)
