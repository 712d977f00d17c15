-- A minimal init for a real terminal session (the tmux screen capture):
--   nvim -u tests/minimal_init.lua +'SessionTree open file.jsonl'
-- SESSIONTREE_SERVER: the daemon; SESSIONTREE_TEST_AGENT_DIR: a throwaway agent dir.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.rtp:prepend(root)
vim.o.termguicolors = true
vim.o.laststatus = 2
require("sessiontree").setup({
  cmd = { os.getenv("SESSIONTREE_SERVER") or (root .. "/../../.venv/bin/sessiontree"), "serve" },
  agent_dir = os.getenv("SESSIONTREE_TEST_AGENT_DIR"),
  allowed_roots = { vim.fn.getcwd() },
})
