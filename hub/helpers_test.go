package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/wire"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// rueidis's cluster client closes connections a topology refresh
		// replaced 5 s later, and delays a refresh after a failure, from
		// goroutines its Close does not wait for.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
	)
}

// record is one message a fakeTransport received.
type record struct {
	event string
	data  []byte
	at    time.Time
}

// msg is a decoded message.
type msg struct {
	Type       string      `json:"type"`
	Room       string      `json:"room"`
	Status     wire.Status `json:"status"`
	Position   *int64      `json:"position"`
	ETASeconds *int64      `json:"etaSeconds"`
	Rate       float64     `json:"ratePerSecond"`
	NextPollMs *int64      `json:"nextPollMs"`
	OpensAt    string      `json:"opensAt"`
	Paused     bool        `json:"paused"`
	Token      string      `json:"token"`
	NotBefore  string      `json:"notBefore"`
	ExpiresAt  string      `json:"expiresAt"`
	AfterMs    *int64      `json:"afterMs"`
}

// fakeTransport records messages. With stall set, Write blocks until its
// context ends or the transport is closed.
type fakeTransport struct {
	kind  string
	stall bool

	mu     sync.Mutex
	recs   []record
	reason string
	closed chan struct{}
	once   sync.Once
	writes atomic.Int32
}

func newTransport(kind string) *fakeTransport {
	return &fakeTransport{kind: kind, closed: make(chan struct{})}
}

func (f *fakeTransport) Write(deadline time.Time, event string, data []byte) error {
	f.writes.Add(1)
	if f.stall {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-t.C:
			return os.ErrDeadlineExceeded
		case <-f.closed:
			return errors.New("closed")
		}
	}
	select {
	case <-f.closed:
		return errors.New("closed")
	default:
	}
	f.mu.Lock()
	f.recs = append(f.recs, record{event: event, data: append([]byte(nil), data...), at: time.Now()})
	f.mu.Unlock()
	return nil
}

func (f *fakeTransport) Close(reason string) {
	f.once.Do(func() {
		f.mu.Lock()
		f.reason = reason
		f.mu.Unlock()
		close(f.closed)
	})
}

func (f *fakeTransport) Kind() string { return f.kind }

func (f *fakeTransport) isClosed() bool {
	select {
	case <-f.closed:
		return true
	default:
		return false
	}
}

func (f *fakeTransport) closeReason() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reason
}

// msgs returns the decoded messages received so far.
func (f *fakeTransport) msgs(t testing.TB) []msg {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]msg, len(f.recs))
	for i, r := range f.recs {
		if err := json.Unmarshal(r.data, &out[i]); err != nil {
			t.Fatalf("bad message %q: %v", r.data, err)
		}
		if out[i].Type != r.event {
			t.Fatalf("event %q carries type %q", r.event, out[i].Type)
		}
	}
	return out
}

func (f *fakeTransport) records() []record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]record(nil), f.recs...)
}

// withStatus returns the messages with status s.
func withStatus(ms []msg, s wire.Status) []msg {
	var out []msg
	for _, m := range ms {
		if m.Status == s {
			out = append(out, m)
		}
	}
	return out
}

// fakeSource is an in-memory Source.
type fakeSource struct {
	mu     sync.Mutex
	states map[string]wire.State // room/visitor
	calls  map[string]int        // States reads per room/visitor
	claims map[string]wire.Claim // the last claim Reclaim got per room/visitor
	// lost are the visitors the store forgets on every read: they read
	// as not_in_queue, and Reclaim with a claim gives them their state.
	lost     map[string]bool
	batches  []int
	fail     error
	nextPoll time.Duration
	rate     float64 // the admission rate Estimate sends
	// duringRead, when set, runs in States after the states are read and
	// before they are returned: what happens while a read is on its way.
	duringRead func(room string, visitors []string)
}

func newSource() *fakeSource {
	return &fakeSource{states: make(map[string]wire.State), calls: make(map[string]int), claims: make(map[string]wire.Claim),
		lost: make(map[string]bool)}
}

func (s *fakeSource) set(room, visitor string, st wire.State) {
	s.mu.Lock()
	s.states[room+"/"+visitor] = st
	s.mu.Unlock()
}

func (s *fakeSource) reads(room, visitor string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[room+"/"+visitor]
}

func (s *fakeSource) batchSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

// lose has the store forget visitor of room on every read (see lost).
func (s *fakeSource) lose(room, visitor string) {
	s.mu.Lock()
	s.lost[room+"/"+visitor] = true
	s.mu.Unlock()
}

// claim returns the claim the last Reclaim of visitor in room came with.
func (s *fakeSource) claim(room, visitor string) wire.Claim {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claims[room+"/"+visitor]
}

func (s *fakeSource) States(ctx context.Context, room string, visitors []string) ([]wire.State, error) {
	s.mu.Lock()
	out, err := s.readLocked(room, visitors)
	during := s.duringRead
	s.mu.Unlock()
	if during != nil && err == nil {
		during(room, visitors)
	}
	return out, err
}

func (s *fakeSource) readLocked(room string, visitors []string) ([]wire.State, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	s.batches = append(s.batches, len(visitors))
	out := make([]wire.State, len(visitors))
	for i, v := range visitors {
		s.calls[room+"/"+v]++
		st, ok := s.states[room+"/"+v]
		if !ok || s.lost[room+"/"+v] {
			st = wire.State{Status: wire.StatusNotInQueue}
		}
		out[i] = st
	}
	return out, nil
}

// Reclaim notes each claim and gives a lost visitor with one its state.
func (s *fakeSource) Reclaim(ctx context.Context, room string, visitors []string, claims []wire.Claim, states []wire.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if len(claims) != len(visitors) || len(states) != len(visitors) {
		return fmt.Errorf("%d claims and %d states for %d visitors", len(claims), len(states), len(visitors))
	}
	for i, v := range visitors {
		if states[i].Status != wire.StatusNotInQueue || claims[i].IsZero() {
			return fmt.Errorf("reclaim of %s: %s, claim %+v", v, states[i].Status, claims[i])
		}
		s.claims[room+"/"+v] = claims[i]
		if st, ok := s.states[room+"/"+v]; ok && s.lost[room+"/"+v] {
			states[i] = st
		}
	}
	return nil
}

func (s *fakeSource) Admitted(room, visitor string, notBefore, expiresAt time.Time) wire.State {
	return wire.State{Status: wire.StatusAdmitted, Token: "tok-" + visitor, NotBefore: notBefore, ExpiresAt: expiresAt}
}

// Estimate is one second per place; with nextPoll set, position updates are
// paced by it, else every flush may send one. The rate sent is s.rate: 0
// (the default) has pages stand still between updates, so every change of
// position is news; with a rate, only a drift from it is.
func (s *fakeSource) Estimate(room string, position int64) (int64, float64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return position, s.rate, s.nextPoll
}

// entry is one admitted visitor of an admit event: visitor, notBefore and
// expiresAt in Unix ms.
type entry struct {
	Visitor   string
	NotBefore int64
	ExpiresAt int64
}

// fakeBroker is an in-memory Broker: tests call publish.
type fakeBroker struct {
	mu     sync.Mutex
	r      Receiver
	subs   map[string]bool
	subN   map[string]int
	unsubN map[string]int
	ready  atomic.Bool
}

func newBroker() *fakeBroker {
	return &fakeBroker{subs: make(map[string]bool), subN: make(map[string]int), unsubN: make(map[string]int)}
}

func (b *fakeBroker) Run(ctx context.Context, r Receiver) error {
	b.mu.Lock()
	b.r = r
	b.mu.Unlock()
	b.ready.Store(true)
	r.Up()
	<-ctx.Done()
	b.ready.Store(false)
	b.mu.Lock()
	b.r = nil
	b.mu.Unlock()
	return nil
}

func (b *fakeBroker) Subscribe(ctx context.Context, ch string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs[ch] = true
	b.subN[ch]++
	return nil
}

func (b *fakeBroker) Unsubscribe(ctx context.Context, ch string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, ch)
	b.unsubN[ch]++
	return nil
}

func (b *fakeBroker) Ready() bool { return b.ready.Load() }

func (b *fakeBroker) subscribed(ch string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.subs[ch]
}

func (b *fakeBroker) counts(ch string) (sub, unsub int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.subN[ch], b.unsubN[ch]
}

func (b *fakeBroker) receiver() Receiver {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.r
}

func (b *fakeBroker) publish(t testing.TB, room, payload string) {
	t.Helper()
	r := b.receiver()
	if r == nil {
		t.Fatal("broker not running")
	}
	r.Message(wire.Channel(room), []byte(payload))
}

// admitJSON builds an admit event like the queue's admit script does.
func admitJSON(room string, count int, entries ...entry) string {
	var list []string
	for _, e := range entries {
		list = append(list, fmt.Sprintf(`[%q,%d,%d]`, e.Visitor, e.NotBefore, e.ExpiresAt))
	}
	js := "["
	for i, l := range list {
		if i > 0 {
			js += ","
		}
		js += l
	}
	js += "]"
	return fmt.Sprintf(`{"type":"admit","room":%q,"tick":1,"count":%d,"admitted":%s}`, room, count, js)
}

// running is a hub whose Run goroutine a test owns.
type running struct {
	*Hub
	cancel context.CancelFunc
	done   chan error
}

// start runs h until stop (or the test's end).
func start(t testing.TB, h *Hub) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Hub: h, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- h.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop ends Run and waits for it.
func (r *running) stop() {
	r.cancel()
	<-r.done
	r.done <- nil // later stops return at once
}

func mustAttach(t testing.TB, h *Hub, room, visitor string, tr Transport) *Conn {
	t.Helper()
	c, err := h.Attach(context.Background(), room, visitor, tr)
	if err != nil {
		t.Fatalf("attach %s/%s: %v", room, visitor, err)
	}
	return c
}

func (r record) String() string {
	return fmt.Sprintf("%s %s at %s", r.event, r.data, r.at.Format(time.StampMicro))
}
