package visit

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/push"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

var testSecret = []byte("visit-test-secret-0123456789abcdef")

// errStoreDown is a store that cannot be reached.
var errStoreDown = errors.New("dial tcp: connection refused")

// fakeQueue is the queue as maps, with failures on demand. It stands for
// Queue, Tokens and Records.
type fakeQueue struct {
	mu       sync.Mutex
	states   map[string]wire.State  // room|visitor
	tickets  map[string]wire.Ticket // room|visitor: the place JoinAt gave
	joinErrs []error                // JoinAt returns these first, in order
	joins    []string               // visitors JoinAt took
	statuses int                    // Status calls
	down     bool                   // every call fails with errStoreDown
	spent    map[string]bool        // challenges SpendProof took
	consume  error                  // Consume's answer when set
	consumes int
	restored []visitorsig.Token
	lottery  chan chan struct{} // when set, ReadLotteryLog sends one and waits for it to close
}

func newFakeQueue() *fakeQueue {
	return &fakeQueue{states: map[string]wire.State{}, tickets: map[string]wire.Ticket{}, spent: map[string]bool{}}
}

func (f *fakeQueue) JoinAt(_ context.Context, room, visitor string, _ queue.Invite, _ int64) (wire.State, wire.Ticket, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return wire.State{}, wire.Ticket{}, errStoreDown
	}
	if len(f.joinErrs) > 0 {
		err := f.joinErrs[0]
		f.joinErrs = f.joinErrs[1:]
		return wire.State{}, wire.Ticket{}, err
	}
	f.joins = append(f.joins, visitor)
	if t, ok := f.tickets[room+"|"+visitor]; ok { // a refresh keeps its place
		return f.states[room+"|"+visitor], t, nil
	}
	st := wire.State{Room: room, Status: wire.StatusWaiting, Position: int64(len(f.joins)), ETASeconds: 30, ETARange: wire.Range{Low: 20, High: 45}, NextPoll: 10 * time.Second}
	t := wire.Ticket{Room: room, Seq: int64(len(f.joins)), IssuedAt: time.Now()}
	f.states[room+"|"+visitor], f.tickets[room+"|"+visitor] = st, t
	return st, t, nil
}

func (f *fakeQueue) Status(_ context.Context, room, visitor string) (wire.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses++
	if f.down {
		return wire.State{}, errStoreDown
	}
	if st, ok := f.states[room+"|"+visitor]; ok {
		return st, nil
	}
	return wire.State{Room: room, Status: wire.StatusNotInQueue}, nil
}

func (f *fakeQueue) Leave(_ context.Context, room, visitor string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.states[room+"|"+visitor]
	delete(f.states, room+"|"+visitor)
	return ok, nil
}

func (f *fakeQueue) SpendProof(_ context.Context, c visitorsig.Challenge, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := c.ID
	if f.spent[key] {
		return visitorsig.ErrPowUsed
	}
	f.spent[key] = true
	return nil
}

func (f *fakeQueue) RoomConfig(_ context.Context, room string) (settings.Room, error) {
	return settings.Room{BrandTitle: "from the store"}, nil
}

func (f *fakeQueue) Consume(_ context.Context, t visitorsig.Token, _ queue.Use) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.consumes++
	if f.consume != nil {
		return time.Time{}, f.consume
	}
	return t.ExpiresAt, nil
}

func (f *fakeQueue) Restore(_ context.Context, t visitorsig.Token, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restored = append(f.restored, t)
	return nil
}

func (f *fakeQueue) Draw(context.Context, string, int, int) (queue.Draw, error) {
	return queue.Draw{}, queue.ErrNoDraw
}

func (f *fakeQueue) ReadLottery(_ context.Context, room string) (queue.Lottery, error) {
	return queue.Lottery{Commitment: "c0ffee", CommittedAt: time.Now()}, nil
}

func (f *fakeQueue) ReadLotteryLog(ctx context.Context, room string, after int64, limit int) (queue.LotteryLog, error) {
	if f.lottery != nil {
		release := make(chan struct{})
		f.lottery <- release
		<-release
	}
	return queue.LotteryLog{First: 1}, nil
}

// fakeRooms is the room settings in memory.
type fakeRooms struct {
	mu         sync.Mutex
	missing    bool // Exists answers false
	down       bool // Exists fails
	powBits    int
	failClosed bool
	limited    bool // AllowFailOpen answers false
	reloads    int
	onReload   func(*fakeRooms)
	rate       float64
	burst      int
}

func (r *fakeRooms) Exists(context.Context, string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return false, errStoreDown
	}
	return !r.missing, nil
}

func (r *fakeRooms) Version(string) int64 { return 1 }

func (r *fakeRooms) Reload(context.Context, string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloads++
	if r.onReload != nil {
		r.onReload(r)
	}
	return nil
}

func (r *fakeRooms) JoinLimit(string) (float64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rate, r.burst
}

func (r *fakeRooms) PowBits(string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.powBits
}

func (r *fakeRooms) FailClosed(string) bool    { return r.failClosed }
func (r *fakeRooms) AllowFailOpen(string) bool { return !r.limited }

func (r *fakeRooms) Settings(string) (settings.Room, bool) {
	return settings.Room{BrandTitle: "Shop", BrandFooter: `<b>hi</b><script>x</script>`}, true
}

// fakeRecovery records what it is asked to give back.
type fakeRecovery struct {
	mu       sync.Mutex
	readmits int
	retaken  []wire.Ticket
}

// Reclaim gives back every admission claimed and every ticket of room.
func (r *fakeRecovery) Reclaim(_ context.Context, room string, _ []string, claims []wire.Claim, states []wire.State) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range claims {
		switch {
		case states[i].Status != wire.StatusNotInQueue:
		case !c.ExpiresAt.IsZero():
			r.readmits++
			states[i] = wire.State{Room: room, Status: wire.StatusAdmitted, NotBefore: c.NotBefore, ExpiresAt: c.ExpiresAt}
		case c.Ticket.Room == room && !c.Ticket.IsZero():
			r.retaken = append(r.retaken, c.Ticket)
			states[i] = wire.State{Room: room, Status: wire.StatusWaiting, Position: c.Ticket.Seq}
		}
	}
	return nil
}

// fakePush records the targets it was handed.
type fakePush struct {
	mu      sync.Mutex
	targets []push.Target
}

func (p *fakePush) WS(c *fiber.Ctx, t push.Target) error  { return p.take(c, t) }
func (p *fakePush) SSE(c *fiber.Ctx, t push.Target) error { return p.take(c, t) }

func (p *fakePush) take(c *fiber.Ctx, t push.Target) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targets = append(p.targets, t)
	return c.SendStatus(fiber.StatusNoContent)
}

// nonces is push.Nonces in a map.
type nonces struct {
	mu   sync.Mutex
	used map[string]bool
}

func (n *nonces) Claim(_ context.Context, room, nonce string, _ time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.used[room+nonce] {
		return false, nil
	}
	n.used[room+nonce] = true
	return true, nil
}

// countingMetrics counts what the API reports.
type countingMetrics struct {
	mu                    sync.Mutex
	storeErrors           int
	fromMemory, fromStore int
	failOpen              map[string]int
}

func (m *countingMetrics) StoreError() { m.mu.Lock(); m.storeErrors++; m.mu.Unlock() }
func (m *countingMetrics) Poll(mem bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mem {
		m.fromMemory++
	} else {
		m.fromStore++
	}
}
func (m *countingMetrics) FailOpen(o string) { m.mu.Lock(); m.failOpen[o]++; m.mu.Unlock() }

// fixture is an API over fakes, mounted on its own app, with the real
// signer, invite minter and connect tickets.
type fixture struct {
	t        *testing.T
	api      *API
	app      *fiber.App
	q        *fakeQueue
	rooms    *fakeRooms
	recovery *fakeRecovery
	push     *fakePush
	metrics  *countingMetrics
	signer   *visitorsig.Signer
	invites  *invite.Minter
	draining bool
}

func newFixture(t *testing.T, opts *Options) *fixture {
	t.Helper()
	signer, err := visitorsig.NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		t: t, q: newFakeQueue(), rooms: &fakeRooms{}, recovery: &fakeRecovery{}, push: &fakePush{},
		metrics: &countingMetrics{failOpen: map[string]int{}}, signer: signer, invites: invite.NewMinter(testSecret),
	}
	f.api, err = New(Deps{
		Queue: f.q, Tokens: f.q, Records: f.q, Rooms: f.rooms,
		Visitors: signer, EntryTokens: signer, ServiceKeys: serviceKeys{testServiceKey: "shop"}, Challenges: signer, Invites: f.invites,
		Recovery: f.recovery, Push: f.push, Tickets: push.NewTickets(testSecret, &nonces{used: map[string]bool{}}),
		Proxies: noProxies{}, Metrics: f.metrics, Draining: func() bool { return f.draining },
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.app = fiber.New(fiber.Config{ErrorHandler: httperr.Handler(slog.New(slog.DiscardHandler)), DisableStartupMessage: true})
	f.api.Mount(f.app)
	f.app.Group("/api/v1/rooms/:room/orders", f.api.RequireToken).Post("", func(c *fiber.Ctx) error {
		tok, ok := Token(c)
		if !ok {
			return httperr.New(500, "no_token", "the token is not in the request")
		}
		if c.Query("fail") != "" {
			return httperr.New(503, "db_timeout", "the protected side failed")
		}
		return c.JSON(fiber.Map{"visitor": tok.Visitor})
	})
	return f
}

const testServiceKey = "service-key-0123456789"

// serviceKeys maps a service key to its label.
type serviceKeys map[string]string

func (k serviceKeys) ServiceKey(key string) (string, bool) {
	l, ok := k[key]
	return l, ok
}

type noProxies struct{}

func (noProxies) Contains(netip.Addr) bool                    { return false }
func (noProxies) Client(peer netip.Addr, _ string) netip.Addr { return peer }

// answer is one response, its JSON body decoded when it has one.
type answer struct {
	Code   int
	Header http.Header
	Raw    string
	Body   map[string]any
}

func (a answer) errCode() string {
	e, _ := a.Body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (a answer) str(k string) string { s, _ := a.Body[k].(string); return s }

// do sends one request; headers are name, value pairs.
func (f *fixture) do(method, path, body string, headers ...string) answer {
	f.t.Helper()
	a, err := f.try(method, path, body, headers...)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// try is do for any goroutine: it returns the failure to send.
func (f *fixture) try(method, path, body string, headers ...string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.app.Test(req, -1)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{Code: resp.StatusCode, Header: resp.Header, Raw: string(b)}
	_ = json.Unmarshal(b, &a.Body)
	return a, nil
}
