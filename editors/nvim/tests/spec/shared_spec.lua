-- `:SessionTree shared` against the real daemon and a real shared store (PostgreSQL started
-- by tests/store/pg_for_editors.py): other machines' sessions grouped by machine, opened
-- from the store and followed live; no store or an unreachable one said in the window.
local H = require("helpers")

local function start_store(dir)
  local lines = {}
  local proc = vim.system({ H.python, H.repo_root .. "/tests/store/pg_for_editors.py", dir }, {
    stdin = true,
    stdout = function(_, data)
      if data then
        for l in data:gmatch("[^\n]+") do
          table.insert(lines, l)
        end
      end
    end,
  })
  H.wait(function()
    return #lines > 0
  end, "the store started", 60000)
  local info = vim.json.decode(lines[1])
  info.proc = proc
  info.replies = lines
  function info.send(cmd)
    local before = #lines
    proc:write(cmd .. "\n")
    H.wait(function()
      return #lines > before
    end, "the store did " .. cmd, 30000)
  end
  function info.stop()
    proc:write(nil)
    proc:wait(30000)
  end
  return info
end

local function shown(opts)
  local got
  require("sessiontree.shared").show(vim.tbl_extend("force", opts or {}, {
    on_show = function(_, lines)
      got = lines
    end,
  }))
  H.wait(function()
    return got ~= nil
  end, "the shared window drawn", 15000)
  return got
end

describe("shared sessions", function()
  after_each(function()
    H.teardown()
  end)

  it("says so when no store is configured", function()
    H.setup()
    local lines = shown()
    assert.are.equal("No shared store configured", lines[1])
  end)

  it("lists other machines' sessions by machine, opens one and follows it", function()
    local dir = H.tmpdir()
    local store = start_store(dir .. "/store")
    local ok, err = pcall(function()
      H.setup({ store = store.url })
      local lines = shown()
      assert.are.equal("alpha (1)", lines[2])
      assert.truthy(lines[3]:find("Shared hello from alpha", 1, true), lines[3])
      assert.truthy(lines[3]:find("project", 1, true), lines[3])
      -- <CR> on the session opens it from the store in the sidebar.
      local st
      vim.api.nvim_win_set_cursor(0, { 3, 0 })
      require("sessiontree.shared").open(require("sessiontree.shared").session_at_cursor(), {
        on_open = function(s)
          st = s
        end,
      })
      H.wait(function()
        return st and st.renders > 0 and not st.loading
      end, "the shared session drawn", 15000)
      assert.truthy(table.concat(H.lines(st), "\n"):find("Shared hello from alpha", 1, true))
      -- Alpha's agent appends: the sidebar shows it, told by the store.
      store.send("append m2 A live line from alpha")
      H.wait(function()
        return table.concat(H.lines(st), "\n"):find("A live line from alpha", 1, true) ~= nil
      end, "the live line shown", 15000)
      -- The store goes away: the window says so, local work goes on.
      store.send("stop")
      local down = shown()
      assert.truthy(down[1]:find("unreachable", 1, true), down[1])
      store.send("start")
    end)
    store.stop()
    assert(ok, err)
  end)
end)
