-- order: the start of a batch of joins that may be on its way beside the
-- instance's call before it (coalesce.go), before anything else of the
-- script. ARGV[13] = the chain of calls it is one of: the instance's
-- calls of the room at one settings version ("" = the call keeps no
-- order), ARGV[14] = the call's number (the instance numbers its calls in
-- the order they leave), ARGV[15] = the number of the call of the chain
-- that was on its way when this one left (0 = none). A call that came
-- before that one returns {-4} and does nothing: the instance sends it
-- again once the one before it is back, so the instance's joins take
-- their tickets in the order they arrived. A call that arrives after a
-- later call of its chain ran returns {-5} and does nothing: only a call
-- whose connection was closed under it (its joins were answered with the
-- error) can still reach Redis that late, and its joins would take
-- tickets behind joins that arrived after them. K.order holds the number
-- of each chain's last call that ran; it goes ten minutes after its
-- newest chain began, and a call that then finds no number is sent again
-- as one that came early is.
if ARGV[13] ~= '' then
  local last = tonumber(redis.call('HGET', K.order, ARGV[13]) or '0')
  if last > tonumber(ARGV[14]) then return {-5} end
  if ARGV[15] ~= '0' and last < tonumber(ARGV[15]) then return {-4} end
  if redis.call('HSET', K.order, ARGV[13], ARGV[14]) == 1 then
    redis.call('PEXPIRE', K.order, 600000)
  end
end
