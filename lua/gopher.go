package lua

// gopherShim opens the EVAL text of every script (load, loadAlone). The
// EVAL form runs where a server has no functions: miniredis, whose Lua is
// gopher-lua, and Redis before 7.0. gopher-lua's tonumber reads a string
// as Go's strconv does, where Redis's Lua reads it as C's strtod: without
// a '.' only as an integer of 64 bits, so that '1e+8', which miniredis
// itself writes for a score of 100000000 (ZSCORE, ZRANGE WITHSCORES,
// ZMSCORE), '5e-05', which it writes for a Lua number passed to a command,
// and 10000000000000000000 are nil there; and with a digit separator
// ('1_0.5') or a sign after '0x' it reads what strtod does not. A nil
// there raised in the middle of a claim that had written its leases
// (next_due), and let a rate bucket refill at once. Under gopher-lua (no
// other Lua reads '1e5' as nil), tonumber is replaced by one that reads
// those as Redis's Lua does; on any other Lua the text does nothing (and
// must: Redis's EVAL refuses to change a global). Its locals are the
// block's, so it takes none of a script's registers. It finds only plain
// characters: gopher-lua runs a pattern search a character at a time,
// and a field of megabytes read as a number took seconds (make sweep).
// (TestGopherShimReadsAsRedis; patterns_test.go scans it too.)
const gopherShim = `if tonumber('1e5') == nil then
  local read = tonumber
  local function first(v, a, b) -- where a or b is first in v (plain)
    local i, j = string.find(v, a, 1, true), string.find(v, b, 1, true)
    if i and j then return math.min(i, j) end
    return i or j
  end
  tonumber = function(v, base)
    if base ~= nil or type(v) ~= 'string' then return read(v, base) end
    if string.find(v, '_', 1, true) then return nil end
    local x = first(v, 'x', 'X')
    if x then
      local c = string.byte(v, x + 1)
      if c == 43 or c == 45 then return nil end -- a sign after 0x
      return read(v)
    end
    local n = read(v)
    if n or string.find(v, '.', 1, true) then return n end
    local e = first(v, 'e', 'E') or #v + 1
    local c = string.byte(v, e - 1)
    if not c or c < 48 or c > 57 then return nil end -- no digit before it
    return read(string.sub(v, 1, e - 1) .. '.0' .. string.sub(v, e))
  end
end
`
