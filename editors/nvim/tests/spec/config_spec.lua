-- Options, command, highlights and help: no daemon needed.
local H = require("helpers")

describe("setup()", function()
  after_each(function()
    require("sessiontree").setup({})
  end)

  it("stores options without starting anything", function()
    require("sessiontree").setup({ sidebar = { width = 40 } })
    assert.are.equal(40, require("sessiontree.config").get().sidebar.width)
    assert.are.equal("left", require("sessiontree.config").get().sidebar.position)
    assert.are.equal(0, #vim.lsp.get_clients({ name = "sessiontree" }))
  end)

  it("accepts the documented defaults", function()
    local config = require("sessiontree.config")
    assert.has_no.errors(function()
      config.validate(vim.deepcopy(config.defaults))
    end)
  end)

  it("rejects bad options with a message naming the option", function()
    local function err_of(opts)
      local ok, err = pcall(require("sessiontree").setup, opts)
      assert.is_false(ok)
      return tostring(err)
    end
    assert.matches("sidebar.width", err_of({ sidebar = { width = 3 } }))
    assert.matches("sidebar.position", err_of({ sidebar = { position = "top" } }))
    assert.matches("sidebar.filter", err_of({ sidebar = { filter = "tools" } }))
    assert.matches('unknown option "widht"', err_of({ widht = 3 }))
    assert.matches("cmd", err_of({ cmd = {} }))
    assert.matches("preindex", err_of({ preindex = 21 }))
    assert.matches("preindex", err_of({ preindex = 1.5 }))
    assert.matches("preindex", err_of({ preindex = "3" }))
    assert.matches('keymaps%["x"%]', err_of({ keymaps = { x = "no_such_action" } }))
    -- a bad call keeps the previous options
    assert.are.equal(50, require("sessiontree.config").get().sidebar.width)
  end)

  it("takes preindex, an integer from 0 to 20, and leaves it to the daemon when nil", function()
    require("sessiontree").setup({ preindex = 0 })
    assert.are.equal(0, require("sessiontree.config").get().preindex)
    require("sessiontree").setup({})
    assert.is_nil(require("sessiontree.config").get().preindex)
  end)

  it("takes sidebar.preview, on by default", function()
    local config = require("sessiontree.config")
    assert.is_true(config.get().sidebar.preview)
    require("sessiontree").setup({ sidebar = { preview = false } })
    assert.is_false(config.get().sidebar.preview)
    -- the `preview` table is the entry window's, and leaves it alone
    require("sessiontree").setup({ preview = { style = "split" } })
    assert.is_true(config.get().sidebar.preview)
    assert.are.equal("split", config.get().preview.style)
    local ok, err = pcall(require("sessiontree").setup, { sidebar = { preview = "yes" } })
    assert.is_false(ok)
    assert.matches("sidebar.preview", tostring(err))
  end)

  it("lets a keymap be remapped or disabled with false", function()
    local env = H.setup({ keymaps = { q = false, Q = "close", ["<CR>"] = false, gn = "navigate" } })
    local st = H.open(H.fixture("branched.jsonl", env.dir))
    local maps = {}
    for _, m in ipairs(vim.api.nvim_buf_get_keymap(st.buf, "n")) do
      maps[m.lhs] = m.desc
    end
    assert.is_nil(maps["q"])
    assert.is_nil(maps["<CR>"])
    assert.matches("Close the sidebar", maps["Q"])
    assert.matches("Navigate here", maps["gn"])
    assert.matches("Set the label", maps["L"])
    H.teardown()
  end)
end)

describe(":SessionTree", function()
  it("has one command with subcommands and completion", function()
    assert.are.equal(2, vim.fn.exists(":SessionTree"))
    local subs = vim.fn.getcompletion("SessionTree ", "cmdline")
    table.sort(subs)
    assert.are.same({
      "close",
      "context",
      "diff",
      "doctor",
      "export",
      "mark",
      "open",
      "refresh",
      "restore",
      "search",
      "sessions",
      "shared",
      "toggle",
    }, subs)
    assert.are.same({ "open" }, vim.fn.getcompletion("SessionTree op", "cmdline"))
  end)

  it("completes files after open", function()
    local dir = H.tmpdir()
    vim.fn.writefile({}, dir .. "/one.jsonl")
    local got = vim.fn.getcompletion("SessionTree open " .. dir .. "/on", "cmdline")
    assert.are.same({ dir .. "/one.jsonl" }, got)
  end)
end)

describe("highlights", function()
  it("links every group with default = true", function()
    local hl = require("sessiontree.highlight")
    for _, group in ipairs({
      "SessionTreeUser",
      "SessionTreeAssistant",
      "SessionTreeTool",
      "SessionTreeLabel",
      "SessionTreeActive",
      "SessionTreeLeaf",
      "SessionTreeMeta",
    }) do
      local got = vim.api.nvim_get_hl(0, { name = group })
      assert.are.equal(hl.links[group], got.link, group)
      assert.is_true(got.default, group)
    end
  end)

  it("lets a user's highlight win over the default link", function()
    vim.api.nvim_set_hl(0, "SessionTreeUser", { fg = "#ff0000" })
    require("sessiontree.highlight").setup()
    local got = vim.api.nvim_get_hl(0, { name = "SessionTreeUser" })
    assert.is_nil(got.link)
    assert.are.equal(0xff0000, got.fg)
    vim.api.nvim_set_hl(0, "SessionTreeUser", {})
    require("sessiontree.highlight").setup()
  end)
end)

describe("doc/sessiontree.txt", function()
  it("generates help tags and documents commands, options and actions", function()
    local dir = H.tmpdir()
    vim.fn.mkdir(dir .. "/doc", "p")
    vim.fn.writefile(vim.fn.readfile(H.plugin_root .. "/doc/sessiontree.txt"), dir .. "/doc/sessiontree.txt")
    vim.cmd("helptags " .. vim.fn.fnameescape(dir .. "/doc"))
    local tags = {}
    for _, line in ipairs(vim.fn.readfile(dir .. "/doc/tags")) do
      tags[line:match("^(%S+)")] = true
    end
    for _, t in ipairs({ "sessiontree.txt", ":SessionTree", "sessiontree-config", "sessiontree-actions" }) do
      assert.is_true(tags[t] ~= nil, "missing tag " .. t)
    end
    for name in pairs(require("sessiontree.actions").descriptions) do
      assert.is_true(tags["sessiontree-action-" .. name] ~= nil, "undocumented action " .. name)
    end
  end)
end)

describe("session names", function()
  it("are the daemon's displayName, and without one what they were before", function()
    local view = require("sessiontree.view")
    local name = require("sessiontree").session_name
    -- the sidebar's title (an OpenResult)
    assert.are.equal("Fix it", view.title({ displayName = "Fix it", header = { title = "T" }, path = "/x/a.jsonl" }))
    assert.are.equal("T", view.title({ header = { title = "T" }, path = "/x/a.jsonl" }))
    assert.are.equal("a", view.title({ displayName = vim.NIL, header = { title = vim.NIL }, path = "/x/a.jsonl" }))
    assert.are.equal("in-memory session", view.title({ header = {} }))
    -- the sessions picker (a SessionInfo)
    assert.are.equal("Fix it", name({ displayName = "Fix it", title = "T", firstMessage = "m" }))
    assert.are.equal("T", name({ title = "T", firstMessage = "m" }))
    assert.are.equal("m", name({ displayName = "", title = vim.NIL, firstMessage = "m" }))
  end)
end)
