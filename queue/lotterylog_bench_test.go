package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
)

// BenchmarkRandomTick measures one taken admission tick of a random room
// with 20,000 waiting and a batch of 50 on a real redis-server: the time
// of the Admit call and the commands the script ran (from INFO
// commandstats), which is what the lottery's log adds to, and the log's
// memory per pick (the walk's entries included, a small share).
//
//	go test -run '^$' -bench RandomTick ./queue/
func BenchmarkRandomTick(b *testing.B) {
	srv := redistest.StartReal(b)
	r := newRedis(b, srv, "rueidis")
	ctx := context.Background()
	q := newQueue(b, r, fixedBatch(50, 2*time.Millisecond))
	const room, waiting = "bench", 20000
	fill := func(from int) {
		for i := from; i < from+waiting; i += 1000 {
			args := []string{"ZADD", prefix(room) + "q"}
			for j := i; j < i+1000; j++ {
				args = append(args, strconv.Itoa(j+1), fmt.Sprintf("b%07d", j))
			}
			if _, err := r.Do(ctx, args...); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := q.SetRoomConfig(ctx, room, RoomConfig{Method: MethodRandom}); err != nil {
		b.Fatal(err)
	}
	fill(0)
	next := waiting
	// The log's walk of who waits comes first (a few ticks).
	for {
		res, err := q.Admit(ctx, room)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Admitted) > 0 {
			break
		}
	}
	calls := func() int64 {
		v, err := r.Do(ctx, "INFO", "commandstats")
		if err != nil {
			b.Fatal(err)
		}
		s, _ := v.(string)
		var n int64
		for _, line := range strings.Split(s, "\n") {
			if !strings.HasPrefix(line, "cmdstat_") || strings.HasPrefix(line, "cmdstat_info:") ||
				strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") {
				continue
			}
			_, rest, _ := strings.Cut(line, "calls=")
			c, _, _ := strings.Cut(rest, ",")
			x, _ := strconv.ParseInt(c, 10, 64)
			n += x
		}
		return n
	}
	var taken, spent int64
	var busy time.Duration
	b.ResetTimer()
	for range b.N {
		for {
			before := calls()
			start := time.Now()
			res, err := q.Admit(ctx, room)
			if err != nil {
				b.Fatal(err)
			}
			if !res.Taken {
				continue
			}
			busy += time.Since(start)
			spent += calls() - before
			taken++
			if res.Waiting < 1000 {
				b.StopTimer()
				fill(next)
				next += waiting
				b.StartTimer()
			}
			break
		}
	}
	b.ReportMetric(float64(busy.Microseconds())/float64(taken), "µs/tick")
	b.ReportMetric(float64(spent)/float64(taken), "cmds/tick")
	b.StopTimer()
	m, err := r.Do(ctx, "MEMORY", "USAGE", prefix(room)+"lotlog", "SAMPLES", "0")
	if err != nil {
		b.Fatal(err)
	}
	bytes, _ := asInt(m)
	b.ReportMetric(float64(bytes)/float64(taken*50), "log-B/pick")
}
