package visit

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/wire"
)

// A poll sooner than the next-ask hint is answered from memory; leaving,
// or Polls().Forget, sends the next one to the store again.
func TestStatusFromMemory(t *testing.T) {
	f := newFixture(t, nil)
	cred := f.do("POST", "/api/v1/rooms/shop/join", "").str("visitor")
	id, _, _ := f.signer.ParseCredential(cred)
	first := f.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", cred)
	if first.Code != 200 || first.Header.Get("X-Waitroom-Cache") != "" || first.Body["nextPollMs"] != float64(10000) {
		t.Fatalf("first poll: %d %s %v", first.Code, first.Raw, first.Header)
	}
	second := f.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", cred)
	if second.Header.Get("X-Waitroom-Cache") != "hit" || second.Raw != first.Raw || f.q.statuses != 1 {
		t.Fatalf("early poll: %s %v, %d store reads", second.Raw, second.Header, f.q.statuses)
	}
	if f.metrics.fromMemory != 1 || f.metrics.fromStore != 1 || f.api.Polls().Hits() != 1 {
		t.Fatalf("counted %d from memory, %d from the store, %d hits", f.metrics.fromMemory, f.metrics.fromStore, f.api.Polls().Hits())
	}
	f.api.Polls().Forget("shop", id)
	if r := f.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", cred); r.Header.Get("X-Waitroom-Cache") != "" || f.q.statuses != 2 {
		t.Fatalf("after Forget: %v, %d store reads", r.Header, f.q.statuses)
	}
	if r := f.do("DELETE", "/api/v1/rooms/shop/queue", "", "X-Visitor", cred); r.Code != 204 {
		t.Fatalf("leave: %d %s", r.Code, r.Raw)
	}
	// Asked of the store, which forgot the place (the fake's Retake gives
	// it back from the credential's ticket).
	if r := f.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", cred); r.Header.Get("X-Waitroom-Cache") != "" || f.q.statuses != 3 || len(f.recovery.retaken) != 1 {
		t.Fatalf("after leaving: %s %v, %d store reads, retaken %v", r.Raw, r.Header, f.q.statuses, f.recovery.retaken)
	}
	for _, tc := range []struct{ cred, want string }{{"", "missing_visitor"}, {"bad.cred", "invalid_visitor"}} {
		if r := f.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", tc.cred); r.Code != 401 || r.errCode() != tc.want {
			t.Errorf("credential %q: %d %s", tc.cred, r.Code, r.Raw)
		}
	}
}

// A visitor the store forgot gets back what it held: an admission from
// its token, a place from its credential's ticket.
func TestStatusRecovers(t *testing.T) {
	f := newFixture(t, nil)
	id, cred := f.signer.NewVisitor()
	tok := f.signer.SignToken(visitorsig.Token{Room: "shop", Visitor: id, NotBefore: time.Now(), ExpiresAt: time.Now().Add(time.Minute)})
	r := f.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", cred, "Authorization", "Bearer "+tok)
	if r.str("status") != "admitted" || f.recovery.readmits != 1 {
		t.Fatalf("with a token: %s, %d readmits", r.Raw, f.recovery.readmits)
	}
	// A token of another room is not this room's admission.
	other := f.signer.SignToken(visitorsig.Token{Room: "other", Visitor: id, NotBefore: time.Now(), ExpiresAt: time.Now().Add(time.Minute)})
	if r := f.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", cred, "Authorization", "Bearer "+other); r.str("status") != "not_in_queue" || f.recovery.readmits != 1 {
		t.Fatalf("with another room's token: %s, %d readmits", r.Raw, f.recovery.readmits)
	}

	held := f.signer.TicketCredential(id, wire.Ticket{Room: "shop", Seq: 7, IssuedAt: time.Now()})
	r = f.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", held)
	if r.str("status") != "waiting" || r.Body["position"] != float64(7) || len(f.recovery.retaken) != 1 {
		t.Fatalf("with a ticket: %s, retaken %v", r.Raw, f.recovery.retaken)
	}
}

// The poll memory holds at most its bound and forgets what is due.
func TestPollCache(t *testing.T) {
	p := NewPollCache(2)
	now := time.Now()
	p.put(pollKey("r", "a"), []byte("a"), now.Add(time.Second))
	p.put(pollKey("r", "b"), []byte("b"), now.Add(time.Minute))
	p.put(pollKey("r", "c"), []byte("c"), now.Add(time.Minute))
	if p.Len() != 2 {
		t.Fatalf("held %d past a bound of 2", p.Len())
	}
	if _, ok := p.get(pollKey("r", "c"), now); ok {
		t.Fatal("an answer past the bound was kept")
	}
	if b, ok := p.get(pollKey("r", "a"), now); !ok || string(b) != "a" {
		t.Fatalf("get a: %q %v", b, ok)
	}
	if _, ok := p.get(pollKey("r", "a"), now.Add(time.Second)); ok {
		t.Fatal("an answer was served once due")
	}
	p.sweep(now.Add(2 * time.Second))
	p.Forget("r", "b")
	if p.Len() != 0 {
		t.Fatalf("held %d after sweep and forget", p.Len())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Run(ctx, time.Hour); err != nil {
		t.Fatalf("Run after its ctx ended: %v", err)
	}
}

// The draw and lottery records answer with their codes.
func TestRecords(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.do("GET", "/api/v1/rooms/shop/draw", ""); r.Code != 404 || r.errCode() != "no_draw" {
		t.Errorf("draw: %d %s", r.Code, r.Raw)
	}
	if r := f.do("GET", "/api/v1/rooms/shop/draw?limit=-1", ""); r.Code != 400 || r.errCode() != "invalid_query" {
		t.Errorf("draw paging: %d %s", r.Code, r.Raw)
	}
	if r := f.do("GET", "/api/v1/rooms/shop/lottery", ""); r.Code != 200 || r.str("state") != "drawing" || r.str("seed") != "" {
		t.Errorf("lottery: %d %s", r.Code, r.Raw)
	}
}

// Lottery log pages are read at most Options.LogReaders at once; one
// more is refused at once, outside the store.
func TestLotteryLogReaders(t *testing.T) {
	f := newFixture(t, &Options{LogReaders: 1})
	f.q.lottery = make(chan chan struct{})
	done := make(chan answer, 1)
	go func() {
		a, err := f.try("GET", "/api/v1/rooms/shop/lottery/log", "")
		if err != nil {
			a.Raw = err.Error()
		}
		done <- a
	}()
	release := <-f.q.lottery // the first reader is in the store
	busy := f.do("GET", "/api/v1/rooms/shop/lottery/log", "")
	close(release)
	if first := <-done; first.Code != 200 {
		t.Fatalf("first reader: %d %s", first.Code, first.Raw)
	}
	if busy.Code != 503 || busy.errCode() != "lottery_log_busy" || busy.Header.Get("Retry-After") == "" {
		t.Fatalf("a reader over the bound: %d %s %v", busy.Code, busy.Raw, busy.Header)
	}
	f.q.lottery = nil
	if r := f.do("GET", "/api/v1/rooms/shop/lottery/log", ""); r.Code != 200 || r.Header.Get("Cache-Control") != lotteryLogLast {
		t.Fatalf("a reader once the other is done: %d %s", r.Code, r.Raw)
	}
}
