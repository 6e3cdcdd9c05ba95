package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/roomsfile"
)

// logBuffer collects a server's log lines for a test to read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServerLog is startServer on real Redis with the log (Info and up)
// kept in the returned buffer.
func startServerLog(tb testing.TB, srv *redistest.Server, mutate func(*config)) (*testServer, *logBuffer) {
	tb.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ts := startServerWithLog(tb, srv, "rueidis", log, func(c *config) {
		c.OpenRooms = false
		mutate(c)
	})
	return ts, logs
}

// roomsFileOf declares rooms r0..r(n-1), each with batch.
func roomsFileOf(n, batch int) string {
	var b strings.Builder
	b.WriteString("rooms:\n")
	for i := range n {
		fmt.Fprintf(&b, "  r%d:\n    batch: %d\n", i, batch)
	}
	return b.String()
}

// A rooms file over the limits is refused with the file, the line and the
// reason, and nothing of it is applied.
func TestRoomsFileOverLimitAppliesNothing(t *testing.T) {
	srv := redistest.StartReal(t)
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	writeFile(t, rooms, "rooms:\n  keep:\n    batch: 3\n")
	ts, logs := startServerLog(t, srv, func(c *config) { withAdmin(c); c.RoomsFile = rooms; c.OpenRooms = false })
	v := newVisitor(t, ts.URL)

	writeFile(t, rooms, roomsFileOf(roomsfile.MaxRooms+1, 9))
	err := ts.ops.Reload(context.Background())
	want := fmt.Sprintf("-rooms %s:%d: rooms.r%d: is room %d: a rooms file declares at most %d rooms", rooms, 2+2*roomsfile.MaxRooms, roomsfile.MaxRooms, roomsfile.MaxRooms+1, roomsfile.MaxRooms)
	if err == nil || err.Error() != want {
		t.Fatalf("too many rooms: %v\nwant %s", err, want)
	}
	big := "rooms:\n  keep:\n    batch: 9\n" + strings.Repeat("# padding padding padding padding\n", roomsfile.MaxBytes/30)
	writeFile(t, rooms, big)
	err = ts.ops.Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s:%d: the file is larger than 1048576 bytes (1 MiB)", rooms, 1+strings.Count(big[:roomsfile.MaxBytes], "\n"))) {
		t.Fatalf("too big: %v", err)
	}
	for _, room := range []string{"r0", fmt.Sprint("r", roomsfile.MaxRooms-1)} {
		if r := v.admin("GET", "/rooms/"+room, ""); r.num("batch") == 9 {
			t.Fatalf("room %s of a refused file was written: %s", room, r.Raw)
		}
	}
	if ok, _ := ts.q.RoomExists(context.Background(), "r0"); ok {
		t.Fatal("a refused file created r0")
	}
	if r := v.admin("GET", "/rooms/keep", ""); r.num("batch") != 3 {
		t.Fatalf("keep after refused reloads: %s", r.Raw)
	}
	if !strings.Contains(logs.String(), "rooms file reload refused: nothing was written") {
		t.Fatalf("log:\n%s", logs)
	}
}

// An apply that fails part way (the deadline, or Redis gone) says exactly
// which rooms it wrote, and those are exactly the rooms Redis holds; the
// log never says nothing changed. The previous file's pins stay.
func TestRoomsFileFailsPartWay(t *testing.T) {
	for _, how := range []string{"deadline", "redis stopped"} {
		t.Run(how, func(t *testing.T) {
			srv := redistest.StartReal(t)
			rooms := filepath.Join(t.TempDir(), "rooms.yaml")
			writeFile(t, rooms, "rooms:\n  r1:\n    batch: 3\n")
			ts, logs := startServerLog(t, srv, func(c *config) { withAdmin(c); c.RoomsFile = rooms; c.OpenRooms = false })

			// r1 exists with batch 3: updated; r0, r2.. are created.
			writeFile(t, rooms, roomsFileOf(6, 7))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			hook := func(room string) error {
				if n++; n == 3 {
					if how == "redis stopped" {
						srv.Stop()
					} else {
						cancel() // the deadline, as the apply's context sees it
					}
				}
				return nil
			}
			err := ts.ops.Reload(context.WithValue(ctx, roomAppliedKey{}, hook))
			var ae *roomsfile.ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("reload: %v", err)
			}
			want := fmt.Sprintf("-rooms %s:8: room r3 (4 of 6): ", rooms)
			if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "applied in part: 3 rooms were written (created 2, updated 1; r0, r2, r1), 0 already matched; room r3 written: ") ||
				!strings.Contains(err.Error(), "the 2 rooms after it were not applied") || strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("reload: %v", err)
			}
			wantWritten := "written: no;"
			if how == "redis stopped" {
				wantWritten = "written: unknown ("
			}
			if !strings.Contains(err.Error(), wantWritten) {
				t.Fatalf("want %q in %v", wantWritten, err)
			}
			log := logs.String()
			if !strings.Contains(log, "rooms file applied in part") || !strings.Contains(log, "created=\"[r0 r2]\" updated=[r1]") || strings.Contains(log, "nothing was written") {
				t.Fatalf("log:\n%s", log)
			}
			if how == "redis stopped" {
				srv.Restart(t)
				waitfor.Until(t, 10*time.Second, "redis back", func() bool {
					_, err := ts.q.RoomExists(context.Background(), "r0")
					return err == nil
				})
				return // the stopped Redis kept nothing (no persistence)
			}
			bg := context.Background()
			for i := range 6 {
				room := fmt.Sprint("r", i)
				cfg, err := ts.q.RoomConfig(bg, room)
				if err != nil {
					t.Fatal(err)
				}
				if written := cfg.Batch == 7; written != (i < 3) {
					t.Errorf("room %s: batch %d", room, cfg.Batch)
				}
			}
			if a, _ := ts.q.Audit(bg, "r2"); len(a) != 1 || !strings.Contains(a[0], `"who":"rooms-file"`) {
				t.Fatalf("r2's audit, written as the deadline passed: %v", a)
			}
			// The old file's pins stay: r1's batch is still the old file's.
			if fr, _ := ts.fileRoom("r1"); fr.Config.Batch != 3 {
				t.Fatalf("pins after a part apply: %+v", fr.Config)
			}
			// Reloading again applies the rest.
			if err := ts.ops.Reload(bg); err != nil {
				t.Fatal(err)
			}
			for i := range 6 {
				if cfg, _ := ts.q.RoomConfig(bg, fmt.Sprint("r", i)); cfg.Batch != 7 {
					t.Fatalf("r%d after the second reload: %+v", i, cfg)
				}
			}
			if !strings.Contains(logs.String(), `msg="reloaded the rooms file" rooms=6 created=3 updated=0 unchanged=3`) {
				t.Fatalf("log:\n%s", logs)
			}
		})
	}
}

// A failure at the first room whose write landed anyway is not logged as
// "nothing was written".
func TestRoomsFileFailsAtFirstRoom(t *testing.T) {
	srv := redistest.StartReal(t)
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	writeFile(t, rooms, "rooms:\n  r0:\n    batch: 3\n")
	ts, logs := startServerLog(t, srv, func(c *config) { withAdmin(c); c.RoomsFile = rooms; c.OpenRooms = false })
	writeFile(t, rooms, roomsFileOf(3, 7))
	hook := func(string) error { return errors.New("the reply was lost") }
	err := ts.ops.Reload(context.WithValue(context.Background(), roomAppliedKey{}, hook))
	if err == nil || !strings.Contains(err.Error(), "room r0 (1 of 3): the reply was lost; applied in part: no room before it was written, 0 already matched; room r0 written: yes; the 2 rooms after it were not applied") {
		t.Fatalf("reload: %v", err)
	}
	log := logs.String()
	if !strings.Contains(log, "rooms file applied in part") || !strings.Contains(log, "failed=r0 failedWritten=yes") || strings.Contains(log, "nothing was written") {
		t.Fatalf("log:\n%s", log)
	}
}

// A bad rooms file does not keep a removed admin key working: each file
// reloads on its own, through the function SIGHUP calls.
func TestReloadKeysDespiteBadRoomsFile(t *testing.T) {
	srv := redistest.StartReal(t)
	dir := t.TempDir()
	rooms, keys := filepath.Join(dir, "rooms.yaml"), filepath.Join(dir, "keys.yaml")
	writeFile(t, rooms, "rooms:\n  drop:\n    batch: 3\n")
	writeFile(t, keys, "alice: alice-key-0123456789abcdef\nbob: bob-key-0123456789abcdef00\n")
	ts, logs := startServerLog(t, srv, func(c *config) { c.AdminKeysFile = keys; c.RoomsFile = rooms })
	v := newVisitor(t, ts.URL)
	as := func(key string) int {
		return v.do("GET", "/api/v1/admin/rooms/drop", "", "Authorization", "Bearer "+key).Code
	}
	if as("bob-key-0123456789abcdef00") != 200 {
		t.Fatal("bob's key before the reload")
	}
	writeFile(t, keys, "alice: alice-key-0123456789abcdef\n")
	writeFile(t, rooms, "rooms:\n  drop:\n    batch: lots\n")
	err := ts.ops.Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), "rooms.yaml:3: rooms.drop.batch") {
		t.Fatalf("reload: %v", err)
	}
	if c := as("bob-key-0123456789abcdef00"); c != 401 {
		t.Fatalf("bob's removed key after a reload with a bad rooms file: %d", c)
	}
	if c := as("alice-key-0123456789abcdef"); c != 200 {
		t.Fatalf("alice: %d", c)
	}
	if fr, ok := ts.fileRoom("drop"); !ok || fr.Config.Batch != 3 {
		t.Fatalf("the refused rooms file replaced the pins: %+v", fr)
	}
	log := logs.String()
	if !strings.Contains(log, `msg="reloaded the admin keys" adminKeys=1`) || !strings.Contains(log, "rooms file reload refused") {
		t.Fatalf("log:\n%s", log)
	}
	// And the other way: a bad keys file does not stop the rooms file.
	writeFile(t, keys, "carol: short\n")
	writeFile(t, rooms, "rooms:\n  drop:\n    batch: 8\n")
	if err := ts.ops.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "keys.yaml:1") {
		t.Fatalf("reload: %v", err)
	}
	if c := as("alice-key-0123456789abcdef"); c != 200 {
		t.Fatalf("alice after a refused keys file: %d", c)
	}
	if r := v.do("GET", "/api/v1/admin/rooms/drop", "", "Authorization", "Bearer alice-key-0123456789abcdef"); r.num("batch") != 8 {
		t.Fatalf("rooms file beside a bad keys file: %s", r.Raw)
	}
}

// An instance whose rooms file clashes with a live value refuses to start,
// and says which field, why, and the stored value it clashes with.
func TestRoomsFileClashStopsStart(t *testing.T) {
	srv := redistest.StartReal(t)
	live := startServer(t, srv, "rueidis", withAdmin)
	if r := newVisitor(t, live.URL).admin("POST", "/rooms", `{"room":"drop","tokenTtlSeconds":600}`); r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Raw)
	}
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	writeFile(t, rooms, "rooms:\n  drop:\n    batch: 5\n    tokenMaxSeconds: 300\n")
	cfg, err := parseConfig([]string{"-rooms", rooms, "-redis", srv.URL(), "-addr", "127.0.0.1:0", "-admin-key", testAdminKey, "-secret", testSecret}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	_, err = newServer(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
	want := "-rooms " + rooms + ":4: rooms.drop.tokenMaxSeconds: must be at least tokenTtlSeconds (with the settings stored now: tokenTtlSeconds 600); nothing was written"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if c, _ := live.q.RoomConfig(context.Background(), "drop"); c.Batch != 0 {
		t.Fatalf("the refused file wrote batch %d", c.Batch)
	}
}

// BenchmarkRoomsFileApplyMax applies the largest rooms file allowed
// (roomsfile.MaxRooms rooms, each created, with two settings) on a fresh
// real redis-server: what opsfiles.DefaultApplyTimeout must fit.
//
//	go test -run '^$' -bench RoomsFileApplyMax -benchtime 1x ./server/
func BenchmarkRoomsFileApplyMax(b *testing.B) {
	var data strings.Builder
	data.WriteString("rooms:\n")
	for i := range roomsfile.MaxRooms {
		fmt.Fprintf(&data, "  room-%05d:\n    batch: 20\n    message: \"Doors open at nine.\"\n", i)
	}
	f, err := roomsfile.Parse("rooms.yaml", []byte(data.String()))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		srv := redistest.StartReal(b)
		ts := startServer(b, srv, "rueidis", nil)
		b.StartTimer()
		done, err := roomsfile.Apply(context.Background(), f, ts.q, ts.roomsApply())
		if err != nil || len(done.Created) != roomsfile.MaxRooms {
			b.Fatalf("%d created: %v", len(done.Created), err)
		}
		b.StopTimer()
		// Applied again, every room already matches.
		start := time.Now()
		done, err = roomsfile.Apply(context.Background(), f, ts.q, ts.roomsApply())
		if err != nil || done.Unchanged != roomsfile.MaxRooms {
			b.Fatalf("%+v: %v", done, err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-unchanged")
		b.StartTimer()
	}
}
