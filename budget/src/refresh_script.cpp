// The allocator: one atomic Lua script a member runs per refresh (docs/CONTRACT.md
// section 12 specifies it; docs/guide/11-fleet-budget.md explains it).
#include "fairpool/budget/refresh_script.hpp"

namespace fairpool::budget {

std::string_view refresh_script() noexcept {
    return R"lua(-- fairpool budget refresh v1
-- KEYS: 1 {b}:meta (hash), 2 {b}:members (hash: member id -> record), 3 {b}:violations
-- ARGV: 1 op (refresh|leave), 2 member id, 3 budget B, 4 lease L ms, 5 grace G ms,
--       6 forget D ms, 7 fallback, 8 demand, 9 weight, 10 held, 11 limit (the member's
--       max_slots now), 12 applied epoch, 13 applied version
local meta_key, members_key, violations_key = KEYS[1], KEYS[2], KEYS[3]

local function uint(text, what)
  local n = tonumber(text)
  if n == nil or n < 0 or n ~= math.floor(n) or n > 9007199254740991 then
    return redis.error_reply('ERR fairpool budget: ' .. what .. ' is not a non-negative integer: ' .. tostring(text))
  end
  return n
end
local function bad(x) return type(x) == 'table' and x.err ~= nil end

local op, id = ARGV[1], ARGV[2]
if op ~= 'refresh' and op ~= 'leave' then return redis.error_reply('ERR fairpool budget: unknown op ' .. tostring(op)) end
if id == nil or id == '' or string.find(id, '[%s]') then return redis.error_reply('ERR fairpool budget: bad member id') end
local args = {}
local names = {'budget', 'lease_ms', 'grace_ms', 'forget_ms', 'fallback', 'demand', 'weight', 'held', 'limit',
               'applied_epoch', 'applied_version'}
for i, name in ipairs(names) do
  local v = uint(ARGV[i + 2], 'argument ' .. name)
  if bad(v) then return v end
  args[name] = v
end
local B, L, G, D = args.budget, args.lease_ms, args.grace_ms, args.forget_ms
if B < 1 then return redis.error_reply('ERR fairpool budget: budget must be at least 1') end
if L < 1 or D < L + G then return redis.error_reply('ERR fairpool budget: bad lease, grace or forget') end
if args.fallback > B then return redis.error_reply('ERR fairpool budget: fallback above the budget') end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- The budget's state, or a new epoch in learning if it is gone (Redis restarted empty,
-- or the keys were deleted).
local violations = redis.call('GET', violations_key)
if violations then
  violations = uint(violations, violations_key)
  if bad(violations) then return violations end
else
  violations = 0
end
local meta = {}
local raw = redis.call('HGETALL', meta_key)
for i = 1, #raw, 2 do meta[raw[i]] = raw[i + 1] end
local epoch, version, learning_until
if next(meta) == nil then
  epoch = tonumber(t[1]) * 1000000 + tonumber(t[2])
  version = 0
  learning_until = now + L + G
  redis.call('DEL', members_key)
else
  for _, f in ipairs({'budget', 'epoch', 'version', 'learning_until'}) do
    if meta[f] == nil then return redis.error_reply('ERR fairpool budget: ' .. meta_key .. ' has no field ' .. f) end
    local v = uint(meta[f], meta_key .. ' field ' .. f)
    if bad(v) then return v end
    meta[f] = v
  end
  if meta.budget ~= B then
    return redis.error_reply('ERR fairpool budget: ' .. meta_key .. ' holds budget ' .. meta.budget ..
                             ', this member was given ' .. B)
  end
  epoch, version, learning_until = meta.epoch, meta.version, meta.learning_until
  -- A member that applied a version this epoch never reached: writes were lost (a
  -- failover to a replica behind). A new epoch, learning.
  if args.applied_epoch == epoch and args.applied_version > version then
    epoch = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if epoch <= meta.epoch then epoch = meta.epoch + 1 end
    version = args.applied_version
    learning_until = now + L + G
  end
end
local learning = now < learning_until

-- Members: "grant grant_version applied_version held limit demand weight seen fallback".
local function parse(member, text)
  local f = {}
  for w in string.gmatch(text, '%S+') do f[#f + 1] = w end
  if #f ~= 9 then return redis.error_reply('ERR fairpool budget: ' .. members_key .. ' member ' .. member .. ' is corrupt') end
  local r = {}
  for i, name in ipairs({'grant', 'grant_version', 'applied_version', 'held', 'limit', 'demand', 'weight', 'seen',
                         'fallback'}) do
    local v = uint(f[i], members_key .. ' member ' .. member .. ' field ' .. name)
    if bad(v) then return v end
    r[name] = v
  end
  return r
end
local function committed(r)
  local c = math.max(r.held, r.limit)
  if r.applied_version < r.grant_version then c = math.max(c, r.grant) end
  return c
end

local members, order, forgotten = {}, {}, {}
raw = redis.call('HGETALL', members_key)
for i = 1, #raw, 2 do
  local r = parse(raw[i], raw[i + 1])
  if bad(r) then return r end
  if raw[i] ~= id then
    local age = now - r.seen
    if age >= D then
      forgotten[#forgotten + 1] = raw[i]  -- it has dropped to 0 itself
    else
      r.live = age < L
      r.commit = committed(r)
      if age >= L + G then r.commit = math.min(r.commit, r.fallback) end  -- what its fallback keeps
      members[raw[i]] = r
      order[#order + 1] = raw[i]
    end
  end
end

-- The caller.
local me
local stored = redis.call('HGET', members_key, id)
if stored then
  me = parse(id, stored)
  if bad(me) then return me end
else
  me = {grant = 0, grant_version = 0, applied_version = 0}
end
-- Every input is valid: from here on the script writes.
for _, f in ipairs(forgotten) do redis.call('HDEL', members_key, f) end
me.applied_version = (args.applied_epoch == epoch) and args.applied_version or 0
if me.applied_version > me.grant_version then me.applied_version = me.grant_version end
me.held, me.limit, me.demand, me.weight, me.seen, me.fallback =
  args.held, args.limit, args.demand, math.max(args.weight, 1), now, args.fallback

local others = 0
for _, m in ipairs(order) do others = others + members[m].commit end
local free = math.max(B - others, 0)

if op == 'leave' then
  -- A member that has let go of every connection leaves at once; one still holding
  -- some stays (reserved as any member) until it reports none.
  if me.held == 0 and me.limit == 0 then
    redis.call('HDEL', members_key, id)
    redis.call('HSET', meta_key, 'budget', B, 'epoch', epoch, 'version', version, 'learning_until', learning_until)
    if others > B then violations = redis.call('INCR', violations_key) end
    return {0, epoch, version, learning and 1 or 0, 0, 0, others, violations}
  end
  me.demand = 0
end

-- Weighted max-min fair targets over the live members (the caller among them):
-- water-filling B over their demands, the rest split by weight, largest remainders
-- first, ties by member id.
local live = {}
for _, m in ipairs(order) do if members[m].live then live[#live + 1] = {id = m, r = members[m]} end end
live[#live + 1] = {id = id, r = me}
table.sort(live, function(a, b) return a.id < b.id end)
local target, open, remaining = {}, {}, B
for _, x in ipairs(live) do target[x.id] = 0; if x.r.demand > 0 then open[#open + 1] = x end end
while #open > 0 and remaining > 0 do
  local W = 0
  for _, x in ipairs(open) do W = W + x.r.weight end
  local still, used = {}, 0
  for _, x in ipairs(open) do
    if x.r.demand * W <= remaining * x.r.weight then
      target[x.id] = x.r.demand; used = used + x.r.demand
    else
      still[#still + 1] = x
    end
  end
  if #still == #open then
    local rest, parts = remaining, {}
    for _, x in ipairs(open) do
      local share = math.floor(remaining * x.r.weight / W)
      target[x.id] = share; rest = rest - share
      parts[#parts + 1] = {x = x, frac = (remaining * x.r.weight) % W}
    end
    table.sort(parts, function(a, b) if a.frac ~= b.frac then return a.frac > b.frac end return a.x.id < b.x.id end)
    for i = 1, rest do target[parts[i].x.id] = target[parts[i].x.id] + 1 end
    break
  end
  remaining = remaining - used
  open = still
end

-- The grant: the target while capacity is free; while learning, what the member holds.
local want = learning and me.held or target[id]
local grant = math.min(want, free)
if grant ~= me.grant then
  version = version + 1
  me.grant, me.grant_version = grant, version
end
redis.call('HSET', members_key, id, table.concat({me.grant, me.grant_version, me.applied_version, me.held, me.limit,
                                                  me.demand, me.weight, me.seen, me.fallback}, ' '))
redis.call('HSET', meta_key, 'budget', B, 'epoch', epoch, 'version', version, 'learning_until', learning_until)
local total = others + committed(me)
if total > B then violations = redis.call('INCR', violations_key) end
return {grant, epoch, me.grant_version, learning and 1 or 0, target[id], #live, total, violations}
)lua";
}

}  // namespace fairpool::budget
