package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
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
	if err := q.SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodRandom}); err != nil {
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

// BenchmarkLotteryLogRead measures the largest page of a big lottery log
// (10,000 entries, about 60 MB: 3,500 walk entries of 2,000 tickets and
// 6,500 ticks of 50 picks) on a real redis-server, read as it was before
// (one call: the whole XRANGE COUNT 10000, what the lotlogread script did)
// and as ReadLotteryLog reads it now (bounded XRANGE calls, a page bounded
// in bytes). It reports the bytes of the page, the longest Redis call
// serving it (SLOWLOG with every call logged) and, with 16 readers reading
// it over and over on their own connections, the latency of a PING on
// another connection (p50, p99, max over 2 s).
//
//	go test -run '^$' -bench LotteryLogRead -benchtime 1x -timeout 30m ./queue/
func BenchmarkLotteryLogRead(b *testing.B) {
	srv := redistest.StartReal(b)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, ReadTimeout: -1})
	b.Cleanup(func() { _ = c.Close() })
	r := redisconn.NewGoRedis(c)
	ctx := context.Background()
	const room = "biglog"
	key := prefix(room) + "lotlog"
	ts := make([]string, 2000)
	for i := range ts {
		ts[i] = strconv.Itoa(1_000_000 + i)
	}
	snap := strings.Join(ts, ",")
	picks := make([]string, 50)
	for i := range picks {
		picks[i] = fmt.Sprintf("%d:%d:%d:0", 900_000, i*17_000, 1_000_000+i*17_000)
	}
	pick := strings.Join(picks, ",")
	for id := 1; id <= 10000; id++ {
		var err error
		if id%20 < 7 {
			_, err = r.Do(ctx, "XADD", key, strconv.Itoa(id)+"-0", "e", "snap", "after", "", "upto", "", "tickets", snap)
		} else {
			_, err = r.Do(ctx, "XADD", key, strconv.Itoa(id)+"-0", "e", "picks", "tick", strconv.Itoa(id), "picks", pick)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	oneCall := rediscall.NewScript("lotlogread-one-call", "return redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])")
	reads := map[string]func(r Redis) (int, error){
		"before-one-call": func(r Redis) (int, error) {
			v, err := r.Eval(ctx, oneCall, []string{key}, "1-0", "10000")
			rows, _ := decodeLogRows(v)
			n := 0
			for _, row := range rows {
				_, _ = parseLotteryEntry(row.ID, row.Fields)
				n += row.size()
			}
			return n, err
		},
		"after-pages": func(r Redis) (int, error) {
			qq := newQueue(b, r, nil)
			page, err := qq.ReadLotteryLog(ctx, room, 0, 10000)
			bs, _ := json.Marshal(page.Entries)
			return len(bs), err
		},
	}
	for _, name := range []string{"before-one-call", "after-pages"} {
		read := reads[name]
		b.Run(name, func(b *testing.B) {
			if _, err := r.Do(ctx, "CONFIG", "SET", "slowlog-log-slower-than", "0"); err != nil {
				b.Fatal(err)
			}
			if _, err := r.Do(ctx, "CONFIG", "SET", "slowlog-max-len", "100000"); err != nil {
				b.Fatal(err)
			}
			var size int
			var longest time.Duration
			for range b.N {
				if _, err := r.Do(ctx, "SLOWLOG", "RESET"); err != nil {
					b.Fatal(err)
				}
				n, err := read(r)
				if err != nil {
					b.Fatal(err)
				}
				size = n
				longest = max(longest, slowest(b, r, "xrange", "evalsha", "eval"))
			}
			if _, err := r.Do(ctx, "CONFIG", "SET", "slowlog-log-slower-than", "10000"); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(size)/1e6, "MB/page")
			b.ReportMetric(float64(longest.Microseconds())/1000, "ms-longest-call")
			b.StopTimer()
			p50, p99, pmax := pingUnderReaders(b, srv, 16, read)
			b.ReportMetric(p50, "ms-ping-p50")
			b.ReportMetric(p99, "ms-ping-p99")
			b.ReportMetric(pmax, "ms-ping-max")
		})
	}
}

// slowest is the longest call of the named commands in the slow log.
func slowest(b *testing.B, r Redis, names ...string) time.Duration {
	v, err := r.Do(context.Background(), "SLOWLOG", "GET", "100000")
	if err != nil {
		b.Fatal(err)
	}
	rows, _ := v.([]any)
	var out time.Duration
	for _, row := range rows {
		e, _ := row.([]any)
		if len(e) < 4 {
			continue
		}
		us, _ := asInt(e[2])
		args, _ := e[3].([]any)
		if len(args) == 0 {
			continue
		}
		cmd, _ := args[0].(string)
		for _, n := range names {
			if strings.EqualFold(cmd, n) {
				out = max(out, time.Duration(us)*time.Microsecond)
			}
		}
	}
	return out
}

// pingUnderReaders runs readers goroutines, each on its own connection,
// reading with read over and over, and times PINGs on another connection
// for 2 s; it returns the p50, p99 and max in ms.
func pingUnderReaders(b *testing.B, srv *redistest.Server, readers int, read func(Redis) (int, error)) (p50, p99, pmax float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range readers {
		c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, PoolSize: 1, Protocol: 2, ReadTimeout: -1})
		defer c.Close()
		rr := redisconn.NewGoRedis(c)
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := read(rr); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
			}
		})
	}
	pc := goredis.NewClient(&goredis.Options{Addr: srv.Addr, PoolSize: 1, Protocol: 2, ReadTimeout: -1})
	defer pc.Close()
	var lat []float64
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		start := time.Now()
		if err := pc.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
	}
	cancel()
	wg.Wait()
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
}
