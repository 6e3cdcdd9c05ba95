package redisconn

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/rediscall"
)

type goRedis struct {
	c       redis.UniversalClient
	scripts sync.Map // *rediscall.Script -> *redis.Script
}

// NewGoRedis adapts a go-redis client to the Redis seam.
func NewGoRedis(c redis.UniversalClient) rediscall.Redis { return &goRedis{c: c} }

func (r *goRedis) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	l, ok := r.scripts.Load(s)
	if !ok {
		l, _ = r.scripts.LoadOrStore(s, redis.NewScript(s.Src))
	}
	a := make([]any, len(args))
	for i, x := range args {
		a[i] = x
	}
	return goRedisReply(l.(*redis.Script).Run(ctx, r.c, keys, a...).Result())
}

func (r *goRedis) Do(ctx context.Context, args ...string) (any, error) {
	a := make([]any, len(args))
	for i, x := range args {
		a[i] = x
	}
	return goRedisReply(r.c.Do(ctx, a...).Result())
}

func goRedisReply(v any, err error) (any, error) {
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return normalize(v), nil
}
