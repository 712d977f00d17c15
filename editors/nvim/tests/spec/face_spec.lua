-- One face (docs/tree-view.md): the sidebar draws the sessions of tests/fixtures/face exactly
-- as `sessiontree tree` prints them (rows, art, the active path, the row that marks the leaf
-- and the hidden leaf it names), in every filter mode; `R` and `:SessionTree refresh` take one
-- path; a read-only session refuses a label before asking for one; a HOME with pi's and
-- oh-my-pi's agent dirs and no setting lists their sessions by their names.
local H = require("helpers")

local FACE = H.repo_root .. "/tests/fixtures/face"
local CASES = { "hidden-leaf", "label-leaf", "hidden-branches", "unknown-types", "omp18", "pi16" }
local MODES = { "default", "no-tools", "user-only", "all" }

--- A face session's bytes with its header's cwd set (omp's title slot, the first line, kept).
local function with_cwd(name, cwd)
  local lines = vim.fn.readfile(FACE .. "/" .. name .. ".jsonl", "b")
  local at = lines[1]:find('^{"type":"title"') and 2 or 1
  local header = vim.json.decode(lines[at])
  header.cwd = cwd
  lines[at] = vim.json.encode(header)
  return lines
end

--- Write face session `name` into dir (its cwd `cwd`); return its path.
local function place(dir, name, cwd, file)
  vim.fn.mkdir(dir, "p")
  local path = dir .. "/" .. (file or (name .. ".jsonl"))
  vim.fn.writefile(with_cwd(name, cwd), path, "b")
  return path
end

--- What the CLI prints for a file: its rows (without the footer).
local function cli_rows(path, mode)
  local r = vim.system({ H.server, "tree", path, "--filter", mode, "--color", "never" }, { text = true }):wait()
  assert.are.equal(0, r.code, r.stderr)
  local lines = vim.split(vim.trim(r.stdout), "\n", { plain = true })
  table.remove(lines) -- the footer
  return lines
end

--- The rows, the leaf's row (1-based) and what its note says, as the sidebar draws them.
local function drawn(st)
  local ns = require("sessiontree.highlight").ns
  local leaf, note
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(st.buf, ns, 0, -1, { details = true })) do
    local d = m[4]
    if d.line_hl_group == "SessionTreeLeafLine" then
      assert.is_nil(leaf, "one row marks the leaf")
      leaf = m[2] + 1
    end
    if d.virt_text_pos == "eol" and d.virt_text then
      note = vim.trim(d.virt_text[1][1])
    end
  end
  return H.lines(st), leaf, note
end

describe("one face", function()
  local env

  setup(function()
    env = H.setup()
  end)

  teardown(function()
    H.teardown()
  end)

  after_each(function()
    H.close_sidebars()
  end)

  for _, name in ipairs(CASES) do
    it("draws " .. name .. " as the CLI prints it, in every filter mode", function()
      local path = place(H.subdir(env), name, env.dir)
      local st = H.open(path)
      for _, mode in ipairs(MODES) do
        if st.filter ~= mode then
          H.after_render(st, function()
            require("sessiontree.actions").set_filter(st, mode)
          end, "filter " .. mode)
        end
        local cli = cli_rows(path, mode)
        local want, leaf, note = {}, nil, nil
        for i, line in ipairs(cli) do
          -- the CLI marks the leaf's row with ● where the sidebar has "• " and "▶ leaf"
          local at = line:find("● ", 1, true)
          if at then
            leaf = i
            line = line:sub(1, at - 1) .. "• " .. line:sub(at + #"● ")
            local cut = line:find("  (leaf: ", 1, true)
            if cut then
              note = line:sub(cut + 2)
              line = line:sub(1, cut - 1)
            end
          end
          want[i] = line
        end
        local lines, got_leaf, got_note = drawn(st)
        assert.are.same(want, lines, mode)
        assert.are.equal(leaf, got_leaf, mode)
        assert.are.equal(note, got_note, mode)
      end
    end)
  end

  it("R and :SessionTree refresh both bring a search hit's view back to the session's leaf", function()
    local path = place(H.subdir(env), "hidden-branches", env.dir)
    for _, refresh in ipairs({
      function(st)
        require("sessiontree.actions").refresh(st) -- the sidebar's R
      end,
      function()
        vim.cmd("SessionTree refresh")
      end,
    }) do
      local st
      require("sessiontree").open(path, {
        focus_id = "a1", -- a search hit on the other branch: drawn as if it were the leaf
        on_open = function(s)
          st = s
        end,
      })
      local lines, leaf
      H.wait(function()
        if not (st and st.renders > 0 and not st.loading and st.focus_id == "a1") then
          return false
        end
        lines, leaf = drawn(st)
        return leaf ~= nil and lines[leaf]:find("It is YAML.", 1, true) ~= nil
      end, "the hit's view, the hit marked as its leaf")
      H.after_render(st, function()
        refresh(st)
      end, "refreshed")
      lines, leaf = drawn(st)
      -- before: R kept the hit marked ▶ leaf, :SessionTree refresh did not
      assert.is_nil(st.focus_id)
      assert.truthy(lines[leaf]:find("Left as it is.", 1, true), lines[leaf])
      H.close_sidebars()
    end
  end)
end)

describe("search hits", function()
  it("mark their words with «» in vim.ui.select, and leave that to Telescope's highlight there", function()
    local search = require("sessiontree.search")
    local hit = { snippet = "the romeo widget", highlights = { { 4, 9 } }, role = "user", path = "/s/x.jsonl", timestamp = "2026-03-01T09:00:00Z" }
    assert.truthy(search.format_hit(hit):find("the «romeo» widget", 1, true))
    local plain = search.format_hit(hit, { marks = false })
    assert.truthy(plain:find("the romeo widget", 1, true), plain)
    assert.falsy(plain:find("«", 1, true), plain)
  end)
end)

describe("a read-only session", function()
  local saved_home = vim.env.HOME
  after_each(function()
    H.teardown()
    vim.env.HOME = saved_home
  end)

  it("refuses a label before asking for one", function()
    local env = H.setup()
    local home = env.dir .. "/home"
    local r = vim.system({ H.python, H.repo_root .. "/tests/other_agents_home.py", home, env.dir }, { text = true }):wait()
    assert.are.equal(0, r.code, r.stderr)
    vim.env.HOME = home
    local st = H.open(vim.json.decode(r.stdout).claude)
    assert.are.equal("claude", st.agent)
    local asked = false
    local orig_input = vim.ui.input
    vim.ui.input = function(_, on_confirm)
      asked = true
      on_confirm(nil)
    end
    local said = {}
    local orig_notify = vim.notify
    vim.notify = function(msg, level)
      table.insert(said, { msg, level })
    end
    require("sessiontree.actions").label_set(st)
    require("sessiontree.actions").label_clear(st)
    vim.ui.input, vim.notify = orig_input, orig_notify
    assert.is_false(asked, "the label was asked for") -- before: asked, then refused by the daemon
    assert.are.equal(2, #said, vim.inspect(said))
    assert.truthy(said[1][1]:find("read-only", 1, true), said[1][1])
  end)
end)

describe("without an agent dir set", function()
  local saved_home, saved_agent = vim.env.HOME, vim.env.PI_CODING_AGENT_DIR
  after_each(function()
    H.teardown()
    vim.env.HOME, vim.env.PI_CODING_AGENT_DIR = saved_home, saved_agent
  end)

  it("lists the omp 18 and pi 1.6 sessions of the home by their names", function()
    H.teardown()
    local dir = H.tmpdir()
    local home = dir .. "/home"
    local proj = home .. "/src/proj"
    vim.fn.mkdir(proj, "p")
    local omp = place(home .. "/.omp/agent/sessions/-src-proj", "omp18", proj)
    local pi = place(home .. "/.pi/agent/sessions/--" .. proj:sub(2):gsub("/", "-") .. "--", "pi16", proj)
    vim.env.HOME = home -- the daemon (started on the first request) reads this HOME
    vim.env.PI_CODING_AGENT_DIR = nil
    vim.cmd.cd(proj)
    require("sessiontree").setup({ cmd = { H.server, "serve" }, allowed_roots = { dir }, sidebar = { debounce = 10 } })
    local items, shown
    local orig = vim.ui.select
    vim.ui.select = function(list, opts, on_choice)
      items = list
      shown = vim.tbl_map(opts.format_item, list)
      on_choice(nil)
    end
    require("sessiontree").sessions()
    H.wait(function()
      return items ~= nil
    end, "the session picker", 15000)
    vim.ui.select = orig
    local names = {}
    for _, s in ipairs(items) do
      names[s.path] = { require("sessiontree").session_name(s), s.dialect }
    end
    assert.are.same({ [omp] = { "Parser refactor", "omp" }, [pi] = { "Flaky watcher test", "pi" } }, names)
    local joined = table.concat(shown, "\n")
    assert.truthy(joined:find("[omp] Parser refactor", 1, true), joined)
    assert.truthy(joined:find("[pi] Flaky watcher test", 1, true), joined)
    for path, name in pairs({ [omp] = "Parser refactor", [pi] = "Flaky watcher test" }) do
      local st = H.open(path)
      assert.are.equal(name, st.title)
      H.close_sidebars()
    end
  end)
end)
