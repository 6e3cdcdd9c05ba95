package report

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
)

// TestParity holds miniredis and go-redis to what the other tests check on
// real Redis with rueidis (each): the known run of TestKnownRun, written
// by two instances and read back, calls every script of scripts/ and
// gives the same report on real Redis and miniredis, with each client.
func TestParity(t *testing.T) {
	files, err := fs.Glob(scriptFiles, "scripts/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("scripts: %v %v", files, err)
	}
	type outcome struct {
		name, report string
	}
	var outcomes []outcome
	for _, kind := range redistest.Kinds {
		for _, client := range clients {
			name := kind + "/" + client
			t.Run(name, func(t *testing.T) {
				srv := redistest.Start(t, kind)
				c := &countedRedis{Redis: newRedis(t, srv, client)}
				rep := knownReport(t, c)
				t.Logf("%s", rep)
				outcomes = append(outcomes, outcome{name, rep})
				for _, f := range files {
					s := "report_" + strings.TrimSuffix(path.Base(f), ".lua")
					if c.count(s) == 0 {
						t.Errorf("script %s was not called: the parity run must call every script", s)
					}
				}
			})
		}
	}
	for _, o := range outcomes[min(1, len(outcomes)):] {
		if o.report != outcomes[0].report {
			t.Errorf("%s reads\n  %s\n%s reads\n  %s", outcomes[0].name, outcomes[0].report, o.name, o.report)
		}
	}
}

// knownReport plays the known run through two recorders on r and returns
// the room's report, without its times.
func knownReport(t *testing.T, r rediscall.Redis) string {
	ctx := context.Background()
	a, b := New(r, nil), New(r, nil)
	const room = "drop"
	mustDo(t, r, "HSET", "wr:{"+room+"}:stats", "skipped", "7", "dropped", "2")
	k := &run{visitors: 100}
	k.play(a, b, room)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mustDo(t, r, "HSET", "wr:{"+room+"}:stats", "skipped", "10", "dropped", "5", "full", "1")
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Read(ctx, room, time.Now().Add(-24*time.Hour), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	tot := rep.Totals
	soldOut := tot.SoldOutAt != nil
	tot.SoldOutAt = nil
	var series Minute
	for _, m := range rep.Series {
		series.Arrivals += m.Arrivals
		series.Admitted += m.Admitted
	}
	return fmt.Sprintf("totals %+v sold out %v; series arrivals %d admitted %d", tot, soldOut, series.Arrivals, series.Admitted)
}

// countedRedis counts the calls of each script by name.
type countedRedis struct {
	rediscall.Redis
	mu    sync.Mutex
	calls map[string]int
}

func (c *countedRedis) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[s.Name]++
	c.mu.Unlock()
	return c.Redis.Eval(ctx, s, keys, args...)
}

func (c *countedRedis) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[name]
}
