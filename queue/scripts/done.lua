-- Tickets done with. Prelude, after priority.lua.

-- Tickets done with: admitted (under every method), or dropped by
-- presence for being away (presence.lua). Each band keeps a bitmap of
-- its tickets (done: public, offset = the ticket; pdone: priority), set
-- once the ticket is done, which retake.lua reads: a signed ticket whose
-- record is gone (its token spent, given back or expired, or the visitor
-- dropped) never comes back, so a ticket is admitted at most once and a
-- dropped visitor joins again at the back. The bitmaps live as long as
-- the room's state (keep_while_used); a Redis that lost them gets back
-- what the instances remember (queue.Retake). done_now lists the scores
-- this call marked, for the caller to remember.
local DONE_MAX = 4294967295 -- SETBIT's last offset
local done_now = {}

local function done_bit(p, score)
  local s, prio = ticket_of(score)
  if prio == 1 then return K.pdone, s end
  return K.done, s
end

local function mark_done(p, score)
  local sc = tonumber(score)
  if not sc or sc == 0 then return end -- 0: a token's place, no ticket
  local k, s = done_bit(p, sc)
  if s < 1 or s > DONE_MAX then return end
  redis.call('SETBIT', k, s, 1)
  done_now[#done_now + 1] = score
end

local function is_done(p, score)
  local k, s = done_bit(p, score)
  if s < 1 or s > DONE_MAX then return false end
  return redis.call('GETBIT', k, s) == 1
end
