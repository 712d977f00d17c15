-- A big session's search in the sidebar: the rows found so far at once ("searching… N so
-- far" in the winbar), then every row once the daemon says the search is complete
-- (`session/didCompleteSearch`). The daemon is told to treat a session of a few thousand
-- entries as a big one (`SESSIONTREE_PARTIAL_SEARCH_MIN`, `SESSIONTREE_SEARCH_TEXTS_MAX`).
local H = require("helpers")

describe("a search in steps", function()
  local env, path

  setup(function()
    env = H.setup({
      cmd_env = { SESSIONTREE_PARTIAL_SEARCH_MIN = "1000", SESSIONTREE_SEARCH_TEXTS_MAX = "1000" },
    })
    local dir = env.agent .. "/sessions/--proj--"
    vim.fn.mkdir(dir, "p")
    path = dir .. "/big.jsonl"
    local r = vim.system({ H.python, H.repo_root .. "/benchmarks/gen_corpus.py", path, "20000" }):wait()
    assert.are.equal(0, r.code, r.stderr)
  end)

  teardown(function()
    H.teardown()
  end)

  it("shows the rows found so far, then every row", function()
    local st = H.open(path)
    vim.api.nvim_set_current_win(st.win)
    H.answer_inputs({ "neovim" })
    H.after_render(st, function()
      H.feed("/")
    end, "the first rows of the search")
    -- the first answer: the rows found so far, no selected row, the winbar says so
    assert.is_true(st.searching, "the first answer is the rows found so far")
    assert.matches("searching… " .. st.total .. " so far", vim.wo[st.win].winbar, 1, true)
    local first = H.lines(st)
    assert.is_true(#first > 0)
    -- then the daemon completes the search and the sidebar fetches every row's page again
    H.wait(function()
      return not st.searching and not st.loading
    end, "the search completed", 60000)
    local whole, res = H.daemon_lines(st, "default", "neovim")
    assert.is_nil(res.complete) -- a client that does not ask for partial answers gets the whole
    assert.are.equal(res.total, st.total)
    assert.matches(res.total .. " rows", vim.wo[st.win].winbar, 1, true)
    local shown = H.lines(st)
    assert.are.same(vim.list_slice(whole, st.first + 1, st.first + #shown), shown)
    -- the rows found first are the first rows of the whole answer
    assert.are.same(vim.list_slice(whole, 1, #first), first)
  end)
end)
