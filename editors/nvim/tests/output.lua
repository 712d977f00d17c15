-- busted output handler: one line per test, failure details, and a closing
-- "N passed, N failed" line (errors count as failures; pending tests are listed).
return function(options)
  local busted = require("busted")
  local handler = require("busted.outputHandlers.base")()
  local pretty = require("pl.pretty")

  local function describe_failure(f)
    local msg = f.message
    if type(msg) ~= "string" then
      msg = msg == nil and "" or pretty.write(msg)
    end
    local where = f.trace and f.trace.short_src and (f.trace.short_src .. ":" .. tostring(f.trace.currentline)) or ""
    return ("%s\n  %s\n  %s"):format(f.name or "?", where, (msg:gsub("\n", "\n  ")))
  end

  local started
  busted.subscribe({ "test", "start" }, function()
    started = vim.uv.hrtime()
    return nil, true
  end)

  handler.testEnd = function(element, _, status)
    local mark = ({ success = "ok  ", failure = "FAIL", error = "ERR ", pending = "PEND" })[status] or status
    local ms = started and (vim.uv.hrtime() - started) / 1e6 or 0
    io.write(("%s %s (%.0f ms)\n"):format(mark, handler.getFullName(element), ms))
    io.flush()
    return nil, true
  end

  handler.suiteEnd = function()
    for _, p in ipairs(handler.pendings) do
      io.write("\npending: " .. describe_failure(p) .. "\n")
    end
    for _, f in ipairs(handler.failures) do
      io.write("\nfailure: " .. describe_failure(f) .. "\n")
    end
    for _, e in ipairs(handler.errors) do
      io.write("\nerror: " .. describe_failure(e) .. "\n")
    end
    local pend = handler.pendingsCount > 0 and (" (%d pending)"):format(handler.pendingsCount) or ""
    io.write(
      ("\n%d passed, %d failed%s\n"):format(
        handler.successesCount,
        handler.failuresCount + handler.errorsCount,
        pend
      )
    )
    io.flush()
    return nil, true
  end

  handler.fileError = function(element, _, message)
    io.write(("ERR  %s: %s\n"):format(element.name or "?", tostring(message)))
    return nil, true
  end

  busted.subscribe({ "test", "end" }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ "suite", "end" }, handler.suiteEnd)
  busted.subscribe({ "error", "file" }, handler.fileError)
  busted.subscribe({ "error", "describe" }, handler.fileError)
  return handler
end
