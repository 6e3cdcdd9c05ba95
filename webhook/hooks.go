package webhook

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/lograte"
)

// DefaultBackoff is the wait before each retry: an attempt, then one after
// each of these; after the last the delivery is dead.
var DefaultBackoff = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour}

// Options tune delivery. Nil, or any zero field, means the default.
type Options struct {
	// Timeout bounds one attempt, connecting to reading the status line
	// (10 s).
	Timeout time.Duration
	// Lease is how long a claimed delivery stays with the instance that
	// claimed it before another may take it (Timeout + 20 s). It is never
	// less than Timeout + 1 s, so a slow attempt cannot be made twice.
	Lease time.Duration
	// MaxInFlight bounds the attempts this instance makes at once (16).
	MaxInFlight int
	// MaxPerEndpoint bounds this instance's attempts at once to one
	// endpoint (2), and MaxPerRoom to the endpoints of one room (4; a
	// deployment's endpoints count only against their own bound): a
	// receiver that hangs, or a room whose receivers all do, holds no
	// more than that of MaxInFlight, and every other endpoint's
	// deliveries go on.
	MaxPerEndpoint, MaxPerRoom int
	// MaxPending bounds the deliveries waiting for one endpoint, due or
	// waiting for a retry (1000): past it, an event drops the endpoint's
	// oldest that no attempt holds, so a receiver that is down keeps the
	// latest news and Redis holds a bounded outbox.
	MaxPending int
	// OnDropped is told of deliveries MaxPending dropped, by the scope
	// of their endpoint ("deployment" or "room"), for a metric.
	OnDropped func(scope string, n int)
	// OnRestored is told of the rooms whose endpoints, and the
	// deliveries, Redis had lost and this instance put back (restore.go),
	// for a metric.
	OnRestored func(rooms, deliveries int)
	// Poll is how often Run looks for due deliveries (1 s); an Emit on
	// this instance wakes it at once.
	Poll time.Duration
	// Backoff is the wait before each retry (DefaultBackoff).
	Backoff []time.Duration
	// DeadKeep is how many dead deliveries are kept, the oldest dropped
	// first (1000).
	DeadKeep int
	// Allow lists the internal networks webhooks may reach; every other
	// internal address (loopback, private, link-local, see Allowed) is
	// refused, in a URL when an endpoint is set and at connect time
	// after DNS. It is the operator's: the admin API never sets it.
	Allow AllowList
	// Client sends the requests; it must not follow redirects
	// (http.Client with CheckRedirect returning http.ErrUseLastResponse)
	// and must refuse the addresses Allowed refuses. The default does
	// both; a Client of the caller's does its own checks.
	Client *http.Client
	// Logger gets failed attempts and dead deliveries (slog.Default()).
	Logger *slog.Logger
	// Now is the clock of the payloads' and headers' timestamps
	// (time.Now).
	Now func() time.Time
}

// MaxRoomEndpoints is how many endpoints one room may have.
const MaxRoomEndpoints = 10

// Hooks sends the events of every room to their endpoints. Its methods
// are safe for concurrent use.
type Hooks struct {
	r       Redis
	deploy  []Endpoint
	o       Options
	log     *slog.Logger
	name    string        // this instance's claims: name and a counter
	claims  atomic.Uint64 // claims made
	wake    chan struct{} // an Emit made something due
	backoff []time.Duration

	mu    sync.Mutex
	sent  map[string]string     // EmitOnce: room|type to the occurrence sent
	known map[string][]Endpoint // each room's endpoints as last read or set, to put back (restore.go)
	epoch string                // the outbox's marker as last seen

	kmu      sync.Mutex
	kept     map[string]kept // deliveries this instance put in the outbox, not seen done (restore.go)
	keptFull bool            // kept reached maxKept (said once)

	// claimLog writes failing claims as one outage: while Redis is down,
	// every poll fails one.
	claimLog *lograte.Outage
}

// New returns the hooks of the deployment's endpoints deploy (each
// checked with Validate) and the rooms' endpoints in r. o may be nil;
// New keeps a copy of it.
func New(r Redis, deploy []Endpoint, o *Options) (*Hooks, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	opts.Allow = append(AllowList(nil), opts.Allow...)
	seen := map[string]bool{}
	for i, e := range deploy {
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("webhook %d: %w", i+1, err)
		}
		if err := checkTarget(e.URL, opts.Allow); err != nil {
			return nil, fmt.Errorf("webhook %d: %w", i+1, err)
		}
		if seen[e.URL] {
			return nil, fmt.Errorf("webhook %d: url %s is listed twice", i+1, e.URL)
		}
		seen[e.URL] = true
	}
	opts.Timeout = cmp.Or(opts.Timeout, 10*time.Second)
	opts.Lease = max(cmp.Or(opts.Lease, opts.Timeout+20*time.Second), opts.Timeout+time.Second)
	opts.MaxInFlight = cmp.Or(opts.MaxInFlight, 16)
	opts.MaxPerEndpoint = min(cmp.Or(opts.MaxPerEndpoint, 2), opts.MaxInFlight)
	opts.MaxPerRoom = max(min(cmp.Or(opts.MaxPerRoom, 4), opts.MaxInFlight), opts.MaxPerEndpoint)
	opts.MaxPending = cmp.Or(opts.MaxPending, 1000)
	opts.Poll = cmp.Or(opts.Poll, time.Second)
	opts.DeadKeep = cmp.Or(opts.DeadKeep, 1000)
	if opts.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = opts.Allow.dialContext()
		// Through a proxy the proxy would resolve and reach the target,
		// past the check: webhooks connect directly.
		tr.Proxy = nil
		opts.Client = &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Hooks{
		r: r, deploy: append([]Endpoint(nil), deploy...), o: opts, log: opts.Logger,
		name: randomHex(6), wake: make(chan struct{}, 1), sent: map[string]string{}, known: map[string][]Endpoint{},
		kept:     map[string]kept{},
		backoff:  append([]time.Duration(nil), opts.Backoff...),
		claimLog: lograte.NewOutage(opts.Logger, "webhook", nil),
	}
	if len(h.backoff) == 0 {
		h.backoff = DefaultBackoff
	}
	return h, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// payload is the body of every delivery, in the specification's shape.
type payload struct {
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Emit sends event type t of room to every endpoint that wants it: the
// deployment's and the room's. data becomes the payload's "data" object,
// with "room" set to room; it must encode as a JSON object or be nil.
//
// Emit returns once the deliveries are in the outbox (one GET of the
// room's endpoints and one script, none when no endpoint wants t); it
// never waits for a receiver. An unknown t is an error.
func (h *Hooks) Emit(ctx context.Context, room, t string, data any) error {
	return h.emit(ctx, room, t, "", data)
}

// EmitOnce is Emit done once across every instance for room, t and
// occurrence (what makes this one the one: the opensAt a room opened at,
// say): a later call with the same three does nothing, so every instance
// may call it when it notices the event. Only the latest occurrence of
// each room and type is remembered.
func (h *Hooks) EmitOnce(ctx context.Context, room, t, occurrence string, data any) error {
	field := room + "|" + t
	h.mu.Lock()
	done := h.sent[field] == occurrence
	h.mu.Unlock()
	if done {
		return nil
	}
	if err := h.emit(ctx, room, t, occurrence, data); err != nil {
		return err
	}
	h.mu.Lock()
	if len(h.sent) >= maxRemembered {
		clear(h.sent)
	}
	h.sent[field] = occurrence
	h.mu.Unlock()
	return nil
}

// maxRemembered bounds EmitOnce's memory of what this instance sent (past
// it, Redis still answers).
const maxRemembered = 10000

func (h *Hooks) emit(ctx context.Context, room, t, occurrence string, data any) error {
	if !KnownEvent(t) {
		return fmt.Errorf("webhook: unknown event %q", t)
	}
	roomEPs, err := h.RoomEndpoints(ctx, room)
	if err != nil {
		return err
	}
	type target struct{ scope, url string }
	var to []target
	for _, e := range h.deploy {
		if e.Wants(t) {
			to = append(to, target{"deployment", e.URL})
		}
	}
	for _, e := range roomEPs {
		if e.Wants(t) {
			to = append(to, target{"room", e.URL})
		}
	}
	if len(to) == 0 {
		return nil
	}
	body, err := encodePayload(room, t, h.o.Now(), data)
	if err != nil {
		return err
	}
	msg := "msg_" + randomHex(12)
	now := h.o.Now().UnixMilli()
	jobs := make([]job, len(to))
	for i, x := range to {
		jobs[i] = job{ID: fmt.Sprintf("%s.%d", msg, i), Msg: msg, Room: room, Scope: x.scope, URL: x.url, Type: t, Body: string(body), CreatedMs: now}
	}
	once := ""
	if occurrence != "" {
		once = room + "|" + t
	}
	added, dropped, err := enqueue(ctx, h.r, once, occurrence, h.o.MaxPending, jobs)
	if err != nil {
		return err
	}
	if added {
		for _, j := range jobs {
			h.keep(j, now)
		}
	}
	h.dropped(dropped)
	select {
	case h.wake <- struct{}{}:
	default:
	}
	return nil
}

// dropped reports deliveries MaxPending dropped: one warning per
// endpoint, and the count.
func (h *Hooks) dropped(js []job) {
	if len(js) == 0 {
		return
	}
	type endpoint struct{ scope, room, url string }
	by := map[endpoint][]string{}
	var order []endpoint
	for _, j := range js {
		h.forget(j.ID)
		e := endpoint{"room", j.Room, j.URL}
		if j.Scope != "room" {
			e.scope, e.room = "deployment", ""
		}
		if _, ok := by[e]; !ok {
			order = append(order, e)
		}
		by[e] = append(by[e], j.Msg+" "+j.Type)
	}
	for _, e := range order {
		h.log.Warn("webhook deliveries dropped: the endpoint had the most waiting", "scope", e.scope, "room", e.room, "url", e.url,
			"count", len(by[e]), "most", h.o.MaxPending, "dropped", by[e])
		if h.o.OnDropped != nil {
			h.o.OnDropped(e.scope, len(by[e]))
		}
	}
}

// encodePayload is the body of event t of room at now with data.
func encodePayload(room, t string, now time.Time, data any) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return nil, fmt.Errorf("webhook: %s data: %w", t, err)
		}
		if string(raw) != "null" {
			if err := json.Unmarshal(raw, &fields); err != nil {
				return nil, fmt.Errorf("webhook: %s data is not a JSON object", t)
			}
		}
	}
	fields["room"], _ = json.Marshal(room)
	d, _ := json.Marshal(fields)
	return json.Marshal(payload{Type: t, Timestamp: now.UTC().Format(time.RFC3339Nano), Data: d})
}

// RoomEndpoints is room's own endpoints, secrets in full (none: an empty
// list). When Redis has lost them, the ones this instance last read or
// set are written back first (restore.go).
func (h *Hooks) RoomEndpoints(ctx context.Context, room string) ([]Endpoint, error) {
	v, err := h.r.Do(ctx, "GET", roomKey(room))
	if err != nil {
		return nil, fmt.Errorf("webhook: room endpoints: %w", err)
	}
	if v == nil {
		if v, err = h.restoreRoom(ctx, room); err != nil {
			return nil, err
		}
	}
	s, _ := v.(string)
	var eps []Endpoint
	if s != "" {
		if err := json.Unmarshal([]byte(s), &eps); err != nil {
			return nil, fmt.Errorf("webhook: room endpoints of %s: %w", room, err)
		}
	}
	if eps == nil {
		eps = []Endpoint{}
	}
	h.remember(room, eps)
	return eps, nil
}

// SetRoomEndpoints replaces room's endpoints with eps, each checked with
// Validate (at most MaxRoomEndpoints, no URL twice) and refused when its
// host is an internal address Options.Allow does not list
// (webhook_target_not_allowed); none removes them.
func (h *Hooks) SetRoomEndpoints(ctx context.Context, room string, eps []Endpoint) error {
	if err := ValidRoomEndpoints(eps); err != nil {
		return err
	}
	for _, e := range eps {
		if err := checkTarget(e.URL, h.o.Allow); err != nil {
			return err
		}
	}
	// None is written as an empty list, not a missing key: a key missing
	// is one Redis lost, which an instance that remembers the room's
	// endpoints puts back.
	if eps == nil {
		eps = []Endpoint{}
	}
	b, _ := json.Marshal(eps)
	if _, err := h.r.Do(ctx, "SET", roomKey(room), string(b)); err != nil {
		return fmt.Errorf("webhook: set room endpoints: %w", err)
	}
	h.remember(room, eps)
	return nil
}

// ValidRoomEndpoints checks a room's list: each endpoint valid, at most
// MaxRoomEndpoints, no URL twice.
func ValidRoomEndpoints(eps []Endpoint) error {
	if len(eps) > MaxRoomEndpoints {
		return &InvalidError{"too_many_webhooks", fmt.Sprintf("a room has at most %d webhooks", MaxRoomEndpoints)}
	}
	seen := map[string]bool{}
	for _, e := range eps {
		if err := e.Validate(); err != nil {
			return err
		}
		if seen[e.URL] {
			return &InvalidError{"invalid_webhook_url", fmt.Sprintf("webhook url %q is listed twice", e.URL)}
		}
		seen[e.URL] = true
	}
	return nil
}

// secret is the secret of the endpoint a job goes to, as configured now;
// ok false when it is configured no more.
func (h *Hooks) secret(ctx context.Context, j job) (string, bool, error) {
	eps := h.deploy
	if j.Scope == "room" {
		var err error
		if eps, err = h.RoomEndpoints(ctx, j.Room); err != nil {
			return "", false, err
		}
	}
	for _, e := range eps {
		if e.URL == j.URL {
			return e.Secret, true, nil
		}
	}
	return "", false, nil
}
