-- sessiontree: the session tree of a coding agent in a sidebar.
-- Only the command and the default highlight links live here; everything else is required
-- on first use, so no lazy-loading configuration is needed.
if vim.g.loaded_sessiontree then
  return
end
vim.g.loaded_sessiontree = true

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify_once("sessiontree needs Neovim 0.10 or newer", vim.log.levels.WARN)
  return
end

vim.api.nvim_create_user_command("SessionTree", function(info)
  require("sessiontree").command(info)
end, {
  nargs = "*",
  complete = function(arglead, cmdline)
    return require("sessiontree").complete(arglead, cmdline)
  end,
  desc = "sessiontree: toggle | open {file} | sessions [all] | context | doctor | restore | close | refresh",
})

require("sessiontree.highlight").setup()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("sessiontree_highlights", { clear = true }),
  callback = function()
    require("sessiontree.highlight").setup()
  end,
})
