package redisconn

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/waitroom/waitroom/internal/rediscall"
)

type rueidisRedis struct {
	c       rueidis.Client
	scripts sync.Map // *rediscall.Script -> *rueidis.Lua
}

// NewRueidis adapts a rueidis client (auto-pipelined) to the Redis seam.
func NewRueidis(c rueidis.Client) rediscall.Redis { return &rueidisRedis{c: c} }

func (r *rueidisRedis) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	l, ok := r.scripts.Load(s)
	if !ok {
		l, _ = r.scripts.LoadOrStore(s, rueidis.NewLuaScript(s.Src))
	}
	return rueidisReply(l.(*rueidis.Lua).Exec(pipelined{ctx}, r.c, keys, owned(args)))
}

func (r *rueidisRedis) Do(ctx context.Context, args ...string) (any, error) {
	return rueidisReply(r.c.Do(pipelined{ctx}, r.c.B().Arbitrary(owned(args)...).Build()))
}

// owned is a copy of ss in memory of its own (one string, sliced). rueidis
// writes a call from its own goroutine, and a call whose caller gave up
// (ctx done) stays in the pipeline to be written later: what it holds must
// not be a request's buffer, which the server reuses once the request is
// answered. Keys need no copy: they are built by concatenation.
func owned(ss []string) []string {
	size := 0
	for _, s := range ss {
		size += len(s)
	}
	var b strings.Builder
	b.Grow(size)
	for _, s := range ss {
		b.WriteString(s)
	}
	all := b.String()
	out := make([]string, len(ss))
	start := 0
	for i, s := range ss {
		out[i], start = all[start:start+len(s)], start+len(s)
	}
	return out
}

// pipelined hides a context's deadline from rueidis and keeps its
// cancellation. On a connection with nothing in flight, rueidis writes a
// call that has a deadline directly and, when the deadline passes before
// the reply, closes the connection: every call that queued behind it then
// fails with "context deadline exceeded". A tick bounded by its interval
// would so fail the joins and polls that happened to run beside it. A call
// without a deadline goes through the pipeline instead, where running out
// of time (ctx.Done) abandons that call alone and the connection stays.
type pipelined struct{ context.Context }

func (pipelined) Deadline() (time.Time, bool) { return time.Time{}, false }

func rueidisReply(res rueidis.RedisResult) (any, error) {
	v, err := res.ToAny()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// normalize turns nested replies into the seam's types.
func normalize(v any) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return x
	case int:
		return int64(x)
	case map[string]any: // RESP3 maps (HGETALL) become flat field, value lists
		out := make([]any, 0, 2*len(x))
		for k, v := range x {
			out = append(out, k, normalize(v))
		}
		return out
	case map[any]any:
		out := make([]any, 0, 2*len(x))
		for k, v := range x {
			out = append(out, normalize(k), normalize(v))
		}
		return out
	case error:
		if rueidis.IsRedisNil(x) {
			return nil
		}
	}
	return v
}
