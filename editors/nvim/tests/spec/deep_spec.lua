-- A deep tree (64 levels of branches, made by benchmarks/gen_corpus.py) in a 50-column
-- sidebar: every row's text starts within a bounded width, the leaf marker is on screen
-- on a long row, and counts move the cursor (the filters live on f1..f5).
local H = require("helpers")

-- tree_art.py: art up to 24 columns is kept; deeper art is "‹N› " and its last 4 cells
local SHORT_ART_WIDTH, KEPT = 24, 12
local BULLET = vim.fn.strdisplaywidth("• ")

--- Display columns before a row's own content ("[label] " and text) on a drawn line.
local function content_col(line, row)
  local content = (row.label and row.label ~= "") and ("[" .. row.label .. "] " .. row.text) or row.text
  assert(line:sub(-#content) == content, "the line ends with the row's content: " .. line)
  return vim.fn.strdisplaywidth(line:sub(1, #line - #content))
end

--- The widest art allowed for a row `depth` cells deep, plus its bullet.
local function bound(depth)
  local marker = vim.fn.strdisplaywidth(("‹%d› "):format(depth))
  return math.max(SHORT_ART_WIDTH, marker + KEPT) + BULLET
end

--- What the screen shows on the sidebar's window line `lnum` (after a redraw).
local function screen_line(win, lnum)
  vim.cmd("redraw")
  local pos = vim.fn.screenpos(win, lnum, 1)
  assert(pos.row > 0, "line " .. lnum .. " is on screen")
  local wincol = vim.fn.win_screenpos(win)[2]
  local cells = {}
  for col = wincol, wincol + vim.api.nvim_win_get_width(win) - 1 do
    table.insert(cells, vim.fn.screenstring(pos.row, col))
  end
  return table.concat(cells)
end

describe("a deep tree", function()
  local env, path, st

  setup(function()
    env = H.setup()
    path = env.dir .. "/deep.jsonl"
    local r = vim.system({
      H.python,
      H.repo_root .. "/benchmarks/gen_corpus.py",
      path,
      "20000",
      "--branch-every",
      "60",
    }):wait()
    assert.are.equal(0, r.code, r.stderr)
  end)

  teardown(function()
    H.teardown()
  end)

  before_each(function()
    st = H.open(path)
    vim.api.nvim_set_current_win(st.win)
  end)

  after_each(function()
    H.close_sidebars()
    require("sessiontree").setup(vim.tbl_deep_extend("force", require("sessiontree.config").get(), {
      sidebar = { full_art = false },
    }))
  end)

  it("starts the text of every row within the bound, however deep (50 columns)", function()
    assert.are.equal(50, vim.api.nvim_win_get_width(st.win))
    local lines, res = H.daemon_lines(st, "default")
    local deepest, over = 0, {}
    for i, row in ipairs(res.rows) do
      deepest = math.max(deepest, row.depth)
      local col = content_col(lines[i], row)
      if col > bound(row.depth) then
        table.insert(over, ("row %d, depth %d: text at column %d: %s"):format(i, row.depth, col, lines[i]))
      end
    end
    assert.is_true(deepest >= 60, "the corpus is deep: " .. deepest)
    assert.are.same({}, vim.list_slice(over, 1, 5))
    -- the sidebar draws those lines: its loaded window around the (deepest) leaf
    local shown = H.lines(st)
    assert.are.same(vim.list_slice(lines, st.first + 1, st.first + #shown), shown)
    local row, _, lnum = H.cursor_row(st)
    assert.is_true(row.depth >= 60, "the leaf is deep: " .. row.depth)
    assert.matches("^‹" .. row.depth .. "› ", shown[lnum])
    assert.is_true(#row.prefix > 150, "the full art of the leaf is " .. #row.prefix .. " bytes")
    -- each of the bound's figures is under the window's width, with room for the text
    assert.is_true(bound(deepest) + vim.fn.strdisplaywidth("▶ leaf ") < 50 - 10)
  end)

  it("shows the leaf marker on screen before the text of a long leaf row", function()
    local row, _, lnum = H.cursor_row(st)
    assert.is_true(row.isLeaf or row.id == st.leaf_id)
    assert.is_true(vim.fn.strdisplaywidth(H.lines(st)[lnum]) > 100, "the leaf row is long")
    local screen = screen_line(st.win, lnum)
    local art = require("sessiontree.view").art(row)
    assert.are.equal(art .. "• ▶ leaf " .. row.text:sub(1, 10), vim.fn.strcharpart(screen, 0, vim.fn.strchars(art) + 19))
    -- and only there
    for l = 1, #H.lines(st) do
      if l ~= lnum and vim.fn.screenpos(st.win, l, 1).row > 0 then
        assert.is_nil(screen_line(st.win, l):find("▶ leaf", 1, true), "line " .. l)
      end
    end
  end)

  it("moves by counts (14k, 3j, 5j) and switches filters with f1..f5", function()
    assert.are.equal("default", st.filter)
    local _, index = H.cursor_row(st)
    assert.is_true(index - st.first > 20, "rows above the leaf are loaded")
    local function id_at(offset)
      return st.rows[index - st.first + 1 + offset].id
    end
    local renders = st.renders
    H.feed("14k")
    assert.are.equal(id_at(-14), H.cursor_row(st).id)
    H.feed("3j")
    assert.are.equal(id_at(-11), H.cursor_row(st).id)
    H.feed("5j")
    assert.are.equal(id_at(-6), H.cursor_row(st).id)
    vim.wait(100)
    assert.are.equal("default", st.filter)
    assert.are.equal(renders, st.renders, "a count redraws nothing")
    H.after_render(st, function()
      H.feed("f5")
    end, "filter all", 15000)
    assert.are.equal("all", st.filter)
    assert.matches("%[all%]", vim.wo[st.win].winbar)
    H.after_render(st, function()
      H.feed("f3")
    end, "filter user-only", 15000)
    assert.are.equal("user-only", st.filter)
    H.after_render(st, function()
      H.feed("f1")
    end, "filter default", 15000)
    assert.are.equal("default", st.filter)
  end)

  it("draws the full connector art with sidebar.full_art", function()
    H.close_sidebars()
    require("sessiontree").setup(vim.tbl_deep_extend("force", require("sessiontree.config").get(), {
      sidebar = { full_art = true },
    }))
    st = H.open(path)
    local row, _, lnum = H.cursor_row(st)
    local line = H.lines(st)[lnum]
    assert.are.equal(row.prefix, line:sub(1, #row.prefix))
    assert.is_true(content_col(line, row) > 150)
  end)
end)
