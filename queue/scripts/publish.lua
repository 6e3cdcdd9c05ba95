-- Room events go out with publish. In a Redis Cluster the queue marks the
-- channel argument with a leading '!': the event is then sent with SPUBLISH,
-- so it stays on the shard of the room's slot (the channel carries the
-- room's hash tag) instead of being broadcast to every node.
local function publish(channel, msg)
  if string.byte(channel, 1) == 33 then
    return redis.call('SPUBLISH', string.sub(channel, 2), msg)
  end
  return redis.call('PUBLISH', channel, msg)
end
