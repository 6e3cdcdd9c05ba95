package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

func methodOpts() *Options {
	return &Options{Capacity: Capacity{Batch: 2, Tick: 50 * time.Millisecond}, TokenTTL: 30 * time.Second}
}

// TestMethodsAcrossInstances drives one room through reject, passthrough
// and back to fifo while three instances join and tick it: a rejecting
// room closes to newcomers with the operator's message but admits those
// already in, in ticket order; passthrough admits a newcomer at its join
// with a valid token and lets whoever waits go at once; back to fifo,
// newcomers queue and go in ticket order; random shows the draw on every
// instance and admits by lottery, and back to fifo the rest go in ticket
// order.
func TestMethodsAcrossInstances(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "methods"
		qs := threeInstances(t, srv, r, methodOpts)
		if err := qs[0].SetRoomConfig(ctx, room, settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		var waiting []string
		for i := range 6 {
			v := fmt.Sprintf("w%d", i)
			if _, err := qs[i%3].Join(ctx, room, v); err != nil {
				t.Fatal(err)
			}
			waiting = append(waiting, v)
		}

		// reject: newcomers are told closed on every instance.
		if err := qs[1].SetRoomConfig(ctx, room, settings.Room{Paused: true, Method: settings.MethodReject, Message: "Sales open at 9:00 — \"see you\""}); err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			st, err := q.Join(ctx, room, fmt.Sprintf("new%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if st.Status != wire.StatusClosed || st.Message != "Sales open at 9:00 — \"see you\"" {
				t.Fatalf("instance %d: join into a rejecting room: %+v", i, st)
			}
			if b := st.AppendJSON(nil); !jsonValid(b) {
				t.Fatalf("closed state is not JSON: %s", b)
			}
			if st, _ := q.Status(ctx, room, fmt.Sprintf("new%d", i)); st.Status != wire.StatusNotInQueue {
				t.Fatalf("a refused newcomer holds a place: %+v", st)
			}
		}
		// Those already in keep their place and are admitted in order.
		if st, _ := qs[2].Join(ctx, room, "w3"); st.Status != wire.StatusWaiting || st.Position != 4 {
			t.Fatalf("w3 joining again in a rejecting room: %+v", st)
		}
		if err := qs[0].SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodReject}); err != nil {
			t.Fatal(err)
		}
		order := admitAll(t, qs, room, waiting[:4])
		if !slices.Equal(order, waiting[:4]) {
			t.Fatalf("admitted %v, want %v in ticket order", order, waiting[:4])
		}

		// passthrough: a newcomer is admitted at its join, on any instance,
		// and those still waiting go at once.
		if err := qs[2].SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodPassthrough, MaxActive: 1, Strategy: settings.StrategyMaxActive}); err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			v := fmt.Sprintf("pass%d", i)
			st, err := q.Join(ctx, room, v)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status != wire.StatusAdmitted || st.Token == "" {
				t.Fatalf("instance %d: passthrough join: %+v", i, st)
			}
			tok, err := q.signer.ParseToken(st.Token)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := qs[(i+1)%3].Consume(ctx, tok, Check); err != nil {
				t.Fatalf("passthrough token refused on another instance: %v", err)
			}
		}
		if got := admitAll(t, qs, room, waiting[4:]); len(got) != 2 {
			t.Fatalf("passthrough left %v of %v waiting", got, waiting[4:])
		}

		// Back to fifo: newcomers queue, in ticket order.
		if err := qs[1].SetRoomConfig(ctx, room, settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		var late []string
		for i := range 4 {
			v := fmt.Sprintf("late%d", i)
			st, err := qs[i%3].Join(ctx, room, v)
			if err != nil || st.Status != wire.StatusWaiting || st.Position != int64(i+1) {
				t.Fatalf("fifo join %s: %+v %v", v, st, err)
			}
			late = append(late, v)
		}
		if err := qs[1].SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		if got := admitAll(t, qs, room, late); !slices.Equal(got, late) {
			t.Fatalf("fifo admitted %v, want %v", got, late)
		}

		// random: those waiting keep their tickets and are shown the draw
		// on every instance; the ticks of all three admit a batch each by
		// lottery; back to fifo, the rest go in ticket order.
		if err := qs[0].SetRoomConfig(ctx, room, settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		var drawn []string
		for i := range 8 {
			v := fmt.Sprintf("lot%d", i)
			if _, err := qs[i%3].Join(ctx, room, v); err != nil {
				t.Fatal(err)
			}
			drawn = append(drawn, v)
		}
		if err := qs[2].SetRoomConfig(ctx, room, settings.Room{Paused: true, Method: settings.MethodRandom}); err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			st, err := q.Status(ctx, room, drawn[i])
			if err != nil || st.Status != wire.StatusWaiting || st.InDraw != 8 || st.Position != 0 || !st.Paused {
				t.Fatalf("instance %d: %s in a paused random room: %+v %v", i, drawn[i], st, err)
			}
		}
		if err := qs[1].SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodRandom}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := 0; len(got) < 4; i++ {
			res := admitTaken(t, qs[i%3], room)
			got = append(got, admittedIDs(res)...)
		}
		if len(got) != 4 {
			t.Fatalf("two random ticks admitted %v, want 4 (batch 2)", got)
		}
		var rest []string
		for _, v := range drawn {
			if !slices.Contains(got, v) {
				rest = append(rest, v)
			}
		}
		if err := qs[0].SetRoomConfig(ctx, room, settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		for i, v := range rest {
			if st, _ := qs[i%3].Status(ctx, room, v); st.Status != wire.StatusWaiting || st.Position != int64(i+1) || st.InDraw != 0 {
				t.Fatalf("back to fifo, %s: %+v, want position %d", v, st, i+1)
			}
		}
		if err := qs[0].SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		if got := admitAll(t, qs, room, rest); !slices.Equal(got, rest) {
			t.Fatalf("fifo after random admitted %v, want %v", got, rest)
		}
	})
}

// admitAll runs the three instances' tick loops until every visitor of
// want is admitted, and returns them in the order of their notBefore.
func admitAll(t *testing.T, qs []*Queue, room string, want []string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	for _, q := range qs {
		go func() { _ = q.Run(ctx); done <- struct{}{} }()
	}
	defer func() {
		cancel()
		for range qs {
			<-done
		}
	}()
	var states []wire.State
	waitfor.Until(t, 15*time.Second, fmt.Sprintf("all of %v admitted", want), func() bool {
		var err error
		if states, err = qs[0].StatusMany(context.Background(), room, want); err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if s.Status != wire.StatusAdmitted {
				return false
			}
		}
		return true
	})
	idx := make([]int, len(want))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return states[a].NotBefore.Compare(states[b].NotBefore) })
	out := make([]string, len(want))
	for i, j := range idx {
		out[i] = want[j]
	}
	return out
}

func jsonValid(b []byte) bool { return json.Valid(b) }

func TestMethodValidate(t *testing.T) {
	for _, tc := range []struct {
		c     settings.Room
		field string
	}{
		{settings.Room{Method: "lottery"}, "method"},
		{settings.Room{Method: settings.MethodRandom}, ""},
		{settings.Room{Message: string(make([]byte, 501))}, "message"},
		{settings.Room{Message: "\xff"}, "message"},
		{settings.Room{Method: settings.MethodReject, Message: "closed for maintenance"}, ""},
		{settings.Room{Method: settings.MethodPassthrough}, ""},
		{settings.Room{Method: settings.MethodFIFO}, ""},
	} {
		err := tc.c.Validate()
		var fe *settings.FieldError
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field) {
			t.Errorf("%+v: %v, want field %q", tc.c, err, tc.field)
		}
	}
}
