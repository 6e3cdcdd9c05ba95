package queue

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/taskset"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
)

// BenchmarkScripts measures the Redis time of one call of the join, status
// and consume scripts: what a room's one Redis core spends per call, which
// bounds the room's rate whatever runs in front of it. Each sub-benchmark
// runs b.N calls on fresh visitors, one at a time, against a real
// redis-server of its own on a core of its own (pinApart), and reports usec_per_call of EVALSHA from
// INFO commandstats (reset with CONFIG RESETSTAT before the calls), so the
// client's own cost is not in the figure (allocs/op is the client's), as
// name-us/call, and the median call from INFO latencystats as
// name-p50-us: on a busy machine a call that the scheduler interrupts
// weighs on the mean, and the median says what a call costs. name-cpu-us
// is the user CPU time of Redis's main thread per call (INFO cpu), which
// no interruption inflates; it also counts reading each command and
// writing its reply, outside the script.
// "open" is a room nobody configured, "configured" one with stored
// settings (the batch), "branded" one with a dozen set, as a room with a
// message, branding and token lifetimes has (presence on in all).
//
//	go test -run '^$' -bench Scripts -benchtime 20000x ./queue/
func BenchmarkScripts(b *testing.B) {
	for _, room := range []string{"open", "configured", "branded"} {
		b.Run(room+"/join", func(b *testing.B) {
			q, ctx := scriptsBench(b, room)
			cpu0 := resetStats(b, q)
			b.ResetTimer()
			for i := range b.N {
				if _, err := q.Join(ctx, room, benchVisitor(i)); err != nil {
					b.Fatal(err)
				}
			}
			reportScript(b, q, "join", cpu0)
		})
		b.Run(room+"/status", func(b *testing.B) {
			q, ctx := scriptsBench(b, room)
			for i := range b.N {
				if _, err := q.Join(ctx, room, benchVisitor(i)); err != nil {
					b.Fatal(err)
				}
			}
			cpu0 := resetStats(b, q)
			b.ResetTimer()
			for i := range b.N {
				if _, err := q.Status(ctx, room, benchVisitor(i)); err != nil {
					b.Fatal(err)
				}
			}
			reportScript(b, q, "status", cpu0)
		})
		b.Run(room+"/consume", func(b *testing.B) {
			q, ctx := scriptsBench(b, room)
			nb := time.Now().Add(-time.Second)
			for i := range b.N {
				writeToken(b, q, room, benchVisitor(i), nb)
			}
			cpu0 := resetStats(b, q)
			b.ResetTimer()
			for i := range b.N {
				if _, err := q.Consume(ctx, visitorsig.Token{Room: room, Visitor: benchVisitor(i), NotBefore: nb}, Spend); err != nil {
					b.Fatal(err)
				}
			}
			reportScript(b, q, "consume", cpu0)
		})
	}
}

func benchVisitor(i int) string { return "bv" + strconv.Itoa(i) }

// scriptsBench starts a redis-server and a Queue on it (rueidis), with
// room configured when it is "configured" or "branded" (see
// BenchmarkScripts), and every script of the benchmark loaded (a first
// call is an EVAL).
func scriptsBench(b *testing.B, room string) (*Queue, context.Context) {
	b.Helper()
	b.ReportAllocs()
	ctx := context.Background()
	srv := redistest.StartReal(b)
	pinApart(b, srv)
	q := newQueue(b, newRedis(b, srv, "rueidis"), nil)
	var cfg *settings.Room
	switch room {
	case "configured":
		cfg = &settings.Room{Batch: 20}
	case "branded":
		cfg = &settings.Room{Batch: 20, MaxActive: 500, TokenTTL: 10 * time.Minute, TokenMax: time.Hour,
			Message: "Thank you for waiting: the sale opens soon.", AwayAfter: 2 * time.Minute,
			DropAfter: 10 * time.Minute, BrandTitle: "Spring sale", BrandAccent: "#0a7f5a",
			BrandBackground: "#f4f1ea", BrandFooter: "Example Shop Ltd"}
	}
	if cfg != nil {
		if err := q.SetRoomConfig(ctx, room, *cfg); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := q.Join(ctx, room, "warm"); err != nil {
		b.Fatal(err)
	}
	if _, err := q.Status(ctx, room, "warm"); err != nil {
		b.Fatal(err)
	}
	_, _ = q.Consume(ctx, visitorsig.Token{Room: room, Visitor: "warm", NotBefore: time.Now()}, Spend)
	return q, ctx
}

// pinApart puts the redis-server of s on the machine's last CPU and this
// process on the others (taskset) until the benchmark ends: Redis has a
// core of its own, as a room's Redis has in production, and what the
// benchmark's client does is not on it. With one CPU, or without taskset,
// nothing is pinned and the benchmark logs it.
func pinApart(b *testing.B, s *redistest.Server) {
	b.Helper()
	n := runtime.NumCPU()
	if err := taskset.Available(); err != nil || n < 2 || s.PID() == 0 {
		b.Logf("Redis not pinned to a core of its own (%d CPUs, %v)", n, err)
		return
	}
	rest := "0"
	if n > 2 {
		rest += "-" + strconv.Itoa(n-2)
	}
	if _, err := taskset.Move(s.PID(), strconv.Itoa(n-1)); err != nil {
		b.Logf("Redis not pinned: %v", err)
		return
	}
	restore, err := taskset.Move(os.Getpid(), rest)
	if err != nil {
		b.Logf("the benchmark not pinned: %v", err)
		return
	}
	b.Cleanup(restore)
}

// writeToken stores an admitted visitor's token record as admission does
// (admit.lua), valid from nb for ten minutes.
func writeToken(b *testing.B, q *Queue, room, visitor string, nb time.Time) {
	b.Helper()
	ctx := context.Background()
	n, e := nb.UnixMilli(), nb.Add(10*time.Minute).UnixMilli()
	rec := fmt.Sprintf("%d:%d:%d", n, e, e)
	if _, err := q.r.Do(ctx, "SET", prefix(room)+"t:"+visitor, rec, "PX", "900000"); err != nil {
		b.Fatal(err)
	}
	if _, err := q.r.Do(ctx, "ZADD", prefix(room)+"active", strconv.FormatInt(e, 10), visitor); err != nil {
		b.Fatal(err)
	}
}

// resetStats resets Redis's command and latency stats, and returns the
// user CPU time of its main thread so far, in seconds.
func resetStats(b *testing.B, q *Queue) float64 {
	b.Helper()
	if _, err := q.r.Do(context.Background(), "CONFIG", "RESETSTAT"); err != nil {
		b.Fatal(err)
	}
	return userCPU(b, q)
}

func userCPU(b *testing.B, q *Queue) float64 {
	b.Helper()
	v, err := q.r.Do(context.Background(), "INFO", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	info, _ := v.(string)
	_, sec, ok := evalshaStat(info, "used_cpu_user_main_thread:", "", "")
	if !ok {
		b.Fatalf("no used_cpu_user_main_thread in INFO cpu:\n%s", info)
	}
	return sec
}

// reportScript reports EVALSHA's usec_per_call and median since the last
// reset, and Redis's user CPU time per call since cpu0; the calls must be
// the b.N of the benchmark (a retry or a second script per call would show
// as more).
func reportScript(b *testing.B, q *Queue, name string, cpu0 float64) {
	b.Helper()
	b.StopTimer()
	cpu := userCPU(b, q) - cpu0
	calls, usec := evalshaCalls(b, q)
	if calls != int64(b.N) {
		b.Fatalf("%d EVALSHA calls for %d %s calls", calls, b.N, name)
	}
	b.ReportMetric(usec, name+"-us/call")
	b.ReportMetric(cpu*1e6/float64(b.N), name+"-cpu-us")
	if v, err := q.r.Do(context.Background(), "INFO", "latencystats"); err == nil {
		info, _ := v.(string)
		if _, p50, ok := evalshaStat(info, "latency_percentiles_usec_evalsha:", "", "p50"); ok {
			b.ReportMetric(p50, name+"-p50-us")
		}
	}
}

// evalshaStat reads, from the text of an INFO section, the integer field
// count (none when "") and the number field num of the line that starts
// with prefix; with num "", the line's value is the number.
func evalshaStat(info, prefix, count, num string) (n int64, x float64, ok bool) {
	for line := range strings.Lines(info) {
		rest, found := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !found {
			continue
		}
		if num == "" {
			x, err := strconv.ParseFloat(rest, 64)
			return 0, x, err == nil
		}
		for f := range strings.SplitSeq(rest, ",") {
			k, val, _ := strings.Cut(f, "=")
			switch k {
			case count:
				n, _ = strconv.ParseInt(val, 10, 64)
			case num:
				x, _ = strconv.ParseFloat(val, 64)
				ok = true
			}
		}
	}
	return n, x, ok
}

// BenchmarkStatusStages splits the Redis time of one status call (a
// waiting visitor of a configured room) by what the script has done when
// it returns: each sub-benchmark runs the status script cut short after
// one more stage, returning a reply of the size of the whole script's, so
// that the step from one stage to the next is what that stage costs.
// "reply" is the cost of the call itself (EVALSHA with the script's keys
// and arguments, and a reply of a header and one visitor) with none of the
// script; "prelude" adds the shared functions and tables defined on every
// call; then the Redis clock, the settings, the room's reads and the
// visitor's sign of life, the ranks, and the whole script. Calls are
// EVALSHA from Do, one at a time; usec_per_call and the median come from
// INFO commandstats and latencystats as in BenchmarkScripts.
//
//	go test -run '^$' -bench StatusStages -benchtime 20000x ./queue/
func BenchmarkStatusStages(b *testing.B) {
	const room = "configured"
	src := statusScript.Src
	body := strings.Index(src, "local p = ARGV[1]\n")
	if body < 0 {
		b.Fatal("status.lua's body no longer begins with local p = ARGV[1]")
	}
	const reply = "do return {0, 0, 0, 0, 1, 1, '', -1, 1, 0, 0} end\n"
	cut := func(after string) string {
		i := strings.Index(src[body:], after)
		if i < 0 {
			b.Fatalf("status.lua no longer has %q", after)
		}
		i += body + len(after)
		return src[:i] + reply + src[i:]
	}
	stages := []struct{ name, src string }{
		{"1-reply", reply},
		{"2-prelude", src[:body] + reply + src[body:]},
		{"3-clock", cut("local now = now_ms()\n")},
		{"4-settings", cut("local cfg = load_cfg(p)\n")},
		{"5-room-and-sign-of-life", cut("seen_many(p, cfg, visitors, now)\n")},
		{"6-ranks", cut("local ahead = presence_ahead(p)\n")},
		{"7-whole", src},
	}
	for _, st := range stages {
		b.Run(st.name, func(b *testing.B) {
			q, ctx := scriptsBench(b, room)
			for i := range 1000 {
				if _, err := q.Join(ctx, room, benchVisitor(i)); err != nil {
					b.Fatal(err)
				}
			}
			sha, err := q.r.Do(ctx, "SCRIPT", "LOAD", st.src)
			if err != nil {
				b.Fatal(err)
			}
			keys := statusScript.keys(room, "")
			args := append([]string{"EVALSHA", sha.(string), strconv.Itoa(len(keys))}, keys...)
			args = append(args, prefix(room), seed(), q.channel(room), benchVisitor(500))
			cpu0 := resetStats(b, q)
			b.ResetTimer()
			for range b.N {
				if _, err := q.r.Do(ctx, args...); err != nil {
					b.Fatal(err)
				}
			}
			reportScript(b, q, "status", cpu0)
		})
	}
}

// BenchmarkCallFloor measures what Redis spends on a script's commands
// apart from the commands' own work: an EVALSHA that returns at once,
// and ones that make ten calls of a cheap read (EXISTS, ZSCORE of an
// absent member) or of TIME. Each reports usec_per_call of the EVALSHA
// and, as call-us, the cost of one redis.call inside it: the step from the
// empty script, over ten. A script's Redis time is about the empty call,
// plus its calls times call-us, plus the work of those commands and its
// own Lua; it is the floor under the scripts' figures in
// BenchmarkScripts.
//
//	go test -run '^$' -bench CallFloor -benchtime 20000x ./queue/
func BenchmarkCallFloor(b *testing.B) {
	const empty = "return 1"
	scripts := []struct{ name, src string }{
		{"empty", empty},
		{"exists", "for i = 1, 10 do redis.call('EXISTS', KEYS[1]) end return 1"},
		{"zscore", "for i = 1, 10 do redis.call('ZSCORE', KEYS[1], ARGV[1]) end return 1"},
		{"time", "for i = 1, 10 do redis.call('TIME') end return 1"},
	}
	var base float64
	for _, sc := range scripts {
		b.Run(sc.name, func(b *testing.B) {
			ctx := context.Background()
			srv := redistest.StartReal(b)
			pinApart(b, srv)
			q := newQueue(b, newRedis(b, srv, "rueidis"), nil)
			if _, err := q.r.Do(ctx, "ZADD", "{floor}:z", "1", "a"); err != nil {
				b.Fatal(err)
			}
			sha, err := q.r.Do(ctx, "SCRIPT", "LOAD", sc.src)
			if err != nil {
				b.Fatal(err)
			}
			args := []string{"EVALSHA", sha.(string), "1", "{floor}:z", "absent"}
			cpu0 := resetStats(b, q)
			b.ResetTimer()
			for range b.N {
				if _, err := q.r.Do(ctx, args...); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportScript(b, q, "script", cpu0)
			_, usec := evalshaCalls(b, q)
			if sc.src == empty {
				base = usec
			} else if base > 0 {
				b.ReportMetric((usec-base)/10, "call-us")
			}
		})
	}
}

// evalshaCalls is EVALSHA's calls and usec_per_call since the last reset.
func evalshaCalls(b *testing.B, q *Queue) (int64, float64) {
	b.Helper()
	v, err := q.r.Do(context.Background(), "INFO", "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	info, _ := v.(string)
	calls, usec, ok := evalshaStat(info, "cmdstat_evalsha:", "calls", "usec_per_call")
	if !ok {
		b.Fatalf("no cmdstat_evalsha in INFO commandstats:\n%s", info)
	}
	return calls, usec
}
