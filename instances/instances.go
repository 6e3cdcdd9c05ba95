// Package instances keeps a register in Redis of the live instances and
// their push figures: each instance rewrites its line every few seconds,
// the dashboard reads every line, and the number of live instances splits
// a room's rates between them.
package instances

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Key is the Redis hash of every live instance's line.
const Key = "wr:instances"

// Live is how recent a line must be for its instance to count as live
// (instances publish every 2 s); Gone is the age at which a line is
// dropped.
const (
	Live = 10 * time.Second
	Gone = time.Minute
)

// Report is one instance's line.
type Report struct {
	At             time.Time
	WS, SSE        int64
	LagP50, LagP99 time.Duration
	LagCount       uint64
}

// Store is the Redis the instances share.
type Store interface {
	Do(ctx context.Context, args ...string) (any, error)
}

// Register is one instance's view of the register.
type Register struct {
	r  Store
	id string
}

// New returns the register on r for the instance named id.
func New(r Store, id string) *Register { return &Register{r: r, id: id} }

// Publish writes this instance's report, drops the lines of instances gone
// for a minute, and returns how many instances are live, this one
// included.
func (g *Register) Publish(ctx context.Context, rep Report) (live int, err error) {
	if _, err := g.r.Do(ctx, "HSET", Key, g.id, encode(rep)); err != nil {
		return 0, err
	}
	all, err := g.All(ctx)
	if err != nil {
		return 0, err
	}
	for id, st := range all {
		switch age := rep.At.Sub(st.At); {
		case age > Gone:
			_, _ = g.r.Do(ctx, "HDEL", Key, id)
		case age <= Live:
			live++
		}
	}
	return live, nil
}

// All reads every instance's report, by instance id. Lines that do not
// parse are left out.
func (g *Register) All(ctx context.Context) (map[string]Report, error) {
	v, err := g.r.Do(ctx, "HGETALL", Key)
	if err != nil {
		return nil, err
	}
	flat, _ := v.([]any)
	out := make(map[string]Report, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		id, _ := flat[i].(string)
		line, _ := flat[i+1].(string)
		if st, ok := decode(line); ok {
			out[id] = st
		}
	}
	return out, nil
}

func encode(r Report) string {
	return fmt.Sprintf("%d %d %d %d %d %d", r.At.UnixMilli(), r.WS, r.SSE, r.LagP50.Microseconds(), r.LagP99.Microseconds(), r.LagCount)
}

func decode(s string) (Report, bool) {
	f := strings.Fields(s)
	if len(f) != 6 {
		return Report{}, false
	}
	var n [6]int64
	for i, x := range f {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return Report{}, false
		}
		n[i] = v
	}
	return Report{At: time.UnixMilli(n[0]), WS: n[1], SSE: n[2],
		LagP50: time.Duration(n[3]) * time.Microsecond, LagP99: time.Duration(n[4]) * time.Microsecond, LagCount: uint64(n[5])}, true
}
