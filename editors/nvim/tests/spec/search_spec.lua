-- :SessionTree search against the real daemon: the hit lands on its node, drawn from it.
local H = require("helpers")

describe(":SessionTree search", function()
  local env, path

  setup(function()
    env = H.setup()
    local dir = env.agent .. "/sessions/--proj--"
    vim.fn.mkdir(dir, "p")
    path = H.fixture("branched.jsonl", dir)
  end)

  teardown(function()
    H.teardown()
  end)

  after_each(function()
    H.close_sidebars()
  end)

  local function pick(query, want_id)
    local orig = vim.ui.select
    local shown
    vim.ui.select = function(items, opts, on_choice)
      vim.ui.select = orig
      shown = vim.tbl_map(opts.format_item, items)
      for _, hit in ipairs(items) do
        if hit.entryId == want_id then
          return on_choice(hit)
        end
      end
      on_choice(nil)
    end
    local st
    require("sessiontree").search(query, {
      picker = "select",
      on_open = function(s)
        st = s
      end,
    })
    H.wait(function()
      return st and st.renders > 0 and not st.loading
    end, "the hit's session drawn", 20000)
    vim.ui.select = orig
    return st, shown
  end

  it("opens the hit's session with the cursor on its row and its branch highlighted", function()
    local st, shown = pick("write tests", "u0000002")
    assert.are.equal(vim.uv.fs_realpath(path), st.path)
    assert.are.equal("u0000002", st.focus_id)
    assert.truthy(shown[1]:find("«write tests»", 1, true), shown[1])
    local row = require("sessiontree.view").current_row(st)
    assert.are.equal("u0000002", row.id)
    -- the hit's branch is the highlighted path; the other branch is not
    local on = {}
    for _, r in ipairs(st.rows) do
      on[r.id] = r.onActivePath
    end
    assert.is_true(on["u0000002"])
    assert.is_true(on["a0000002"])
    assert.is_false(on["u0000003"])
    -- :SessionTree refresh goes back to the session's own leaf
    H.after_render(st, function()
      vim.cmd("SessionTree refresh")
    end, "the redraw from the leaf")
    assert.is_nil(st.focus_id)
    for _, r in ipairs(st.rows) do
      on[r.id] = r.onActivePath
    end
    assert.is_false(on["u0000002"])
    assert.is_true(on["u0000003"])
  end)

  it("takes its words from the command line, FTS syntax included, without error", function()
    local orig, got = vim.ui.select, nil
    vim.ui.select = function(items, _, on_choice)
      vim.ui.select = orig
      got = items
      on_choice(nil)
    end
    vim.cmd('SessionTree search "Document it" README*')
    H.wait(function()
      return got ~= nil
    end, "the picker", 20000)
    assert.are.equal("u0000003", got[1].entryId)
    vim.ui.select = orig
    local errors = {}
    local notify = vim.notify
    vim.notify = function(msg, level)
      if level == vim.log.levels.ERROR then
        table.insert(errors, msg)
      end
    end
    local done = 0
    for _, q in ipairs({ '"', "NEAR(", "a AND (", "*", "-x", "col:" }) do
      require("sessiontree.search").query(q, function(err)
        if err then
          table.insert(errors, vim.inspect(err))
        end
        done = done + 1
      end)
    end
    H.wait(function()
      return done == 6
    end, "every query answered", 20000)
    vim.notify = notify
    assert.are.same({}, errors)
  end)
end)
