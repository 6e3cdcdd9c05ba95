package report

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
)

// watchedRedis records what a report read asks of Redis: the most keys
// one call touched, the script calls, and the most calls in flight at once.
type watchedRedis struct {
	rediscall.Redis
	scripts          atomic.Int64
	inFlight, most   atomic.Int64
	mu               sync.Mutex
	mostKeys, allDos int
}

func (w *watchedRedis) enter() func() {
	n := w.inFlight.Add(1)
	for {
		m := w.most.Load()
		if n <= m || w.most.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { w.inFlight.Add(-1) }
}

func (w *watchedRedis) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	defer w.enter()()
	w.scripts.Add(1)
	w.mu.Lock()
	w.mostKeys = max(w.mostKeys, len(keys))
	w.mu.Unlock()
	return w.Redis.Eval(ctx, s, keys, args...)
}

func (w *watchedRedis) Do(ctx context.Context, args ...string) (any, error) {
	defer w.enter()()
	keys := 0
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "wr:{") {
			keys++
		}
	}
	w.mu.Lock()
	w.mostKeys = max(w.mostKeys, keys)
	w.allDos++
	w.mu.Unlock()
	return w.Redis.Do(ctx, args...)
}

// TestReadInShortCalls: a month's report shares Redis with admission, so
// it is read an hour per command, with no script call, and the readers of
// one instance take turns: four dashboards reading at once never have more
// than one command in flight, and no command reads more than one hour.
func TestReadInShortCalls(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r rediscall.Redis) {
		ctx := context.Background()
		to := time.Now().Truncate(time.Hour)
		from := to.Add(-31 * 24 * time.Hour)
		// Some hours hold counts, so the read has something to sum.
		for h := from.Unix() / 3600; h < to.Unix()/3600; h += 50 {
			if _, err := r.Do(ctx, "HSET", hourKey("drop", h), "0:a", "3", "59:a", "4"); err != nil {
				t.Fatal(err)
			}
		}
		w := &watchedRedis{Redis: r}
		rc := New(w, nil)
		var wg sync.WaitGroup
		reports := make([]Report, 4)
		errs := make([]error, 4)
		for i := range reports {
			wg.Go(func() { reports[i], errs[i] = rc.Read(ctx, "drop", from, to) })
		}
		wg.Wait()
		want := int64(0)
		for h := from.Unix() / 3600; h < to.Unix()/3600; h += 50 {
			want += 7
		}
		for i, rep := range reports {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if rep.Totals.Arrivals != want {
				t.Fatalf("reader %d: %d arrivals, want %d", i, rep.Totals.Arrivals, want)
			}
		}
		if n := w.scripts.Load(); n != 0 {
			t.Fatalf("%d script calls for a read, want plain commands", n)
		}
		if w.mostKeys != 1 {
			t.Fatalf("a call of the read touched %d hours, want 1", w.mostKeys)
		}
		if m := w.most.Load(); m != 1 {
			t.Fatalf("%d calls in flight at once from one instance's readers, want 1", m)
		}
		if hours := 31 * 24; w.allDos != 4*hours {
			t.Fatalf("%d commands for 4 reads of %d hours, want one each", w.allDos, hours)
		}
	})
}

// TestReadWaitsItsTurn: a reader whose turn does not come before its
// context ends gets the context's error, not a report.
func TestReadWaitsItsTurn(t *testing.T) {
	srv := redistest.Start(t, "mini")
	rc := New(newRedis(t, srv, "go-redis"), nil)
	rc.reading <- struct{}{} // a read under way
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rc.Read(ctx, "drop", time.Now().Add(-time.Hour), time.Now()); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("read while another is under way, context ended: %v", err)
	}
	<-rc.reading
}
