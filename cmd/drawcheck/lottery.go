package main

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// The lottery (method random) replayed from its log: the revealed seed
// (GET …/lottery) and every entry of the log (GET …/lottery/log). The
// replay rebuilds the tickets waiting from the log's start, and for each
// pick checks n, the rank from the seed and that the ticket picked stood
// at that rank. Written here on its own, like the draw's check.

// lotteryReveal is what the lottery check reads: the lottery endpoint's
// answer and every entry of its log.
type lotteryReveal struct {
	Room       string     `json:"room"`
	State      string     `json:"state"`
	Commitment string     `json:"commitment"`
	Seed       string     `json:"seed"`
	First      int64      `json:"first"` // the oldest entry the server still held
	Entries    []lotEntry `json:"entries"`
}

// lotEntry is one log entry, as the log endpoint writes it.
type lotEntry struct {
	ID         int64     `json:"id"`
	Event      string    `json:"event"`
	Why        string    `json:"why,omitempty"`
	Commitment *string   `json:"commitment,omitempty"`
	At         *int64    `json:"at,omitempty"`
	Tick       *int64    `json:"tick,omitempty"`
	Ticket     *int64    `json:"ticket,omitempty"`
	Away       *bool     `json:"away,omitempty"`
	Below      *int64    `json:"below,omitempty"`
	After      *int64    `json:"after,omitempty"`
	Upto       *int64    `json:"upto,omitempty"`
	Tickets    []int64   `json:"tickets,omitempty"`
	Picks      []lotPick `json:"picks,omitempty"`
	Aside      *[]int64  `json:"aside,omitempty"` // start: set aside then (nil: not listed)
	Back       *[]int64  `json:"back,omitempty"`  // start: come back then
}

// lotPick is pick I of a tick: among N waiting, the ticket at Rank.
type lotPick struct {
	I      int64 `json:"i"`
	N      int64 `json:"n"`
	Rank   int64 `json:"rank"`
	Ticket int64 `json:"ticket"`
	Away   bool  `json:"away"`
}

// errUnverifiable marks a log that cannot be checked (its start was
// trimmed, or the lottery has not ended): not a proof of cheating.
var errUnverifiable = errors.New("unverifiable")

// lotteryRank is the rank of pick i of tick among n: the first 13 hex
// digits of SHA-1(seed:tick:i) as a fraction of 2^52, times n, rounded
// down (exact in float64).
func lotteryRank(seed string, tick, i, n int64) int64 {
	sum := sha1.Sum([]byte(seed + ":" + strconv.FormatInt(tick, 10) + ":" + strconv.FormatInt(i, 10)))
	x, _ := strconv.ParseUint(hex.EncodeToString(sum[:])[:13], 16, 64)
	return int64(float64(x) / 4503599627370496 * float64(n))
}

// replayed is what a replay found.
type replayed struct {
	Entries, Picks, Admitted, SetAside, Ticks int
	Waiting                                   int              // at the end
	Earlier                                   int              // set-aside tickets from before the log began
	Fate                                      map[int64]string // what became of each ticket the log names
}

// replayLottery checks r and returns what it found, or the first mismatch.
func replayLottery(r lotteryReveal) (replayed, error) {
	if err := checkLotteryStart(r); err != nil {
		return replayed{Fate: map[int64]string{}}, err
	}
	p := newLotteryReplay(r.Seed, r.Entries[0])
	for k, e := range r.Entries {
		if e.ID != int64(k)+1 {
			return p.out, p.fail(e, "entry %d is missing", int64(k)+1)
		}
		if p.ended {
			return p.out, p.fail(e, "an entry after the end")
		}
		p.out.Entries++
		if err := p.apply(k, e); err != nil {
			return p.out, err
		}
	}
	if p.walking {
		return p.out, fmt.Errorf("%w: the log ends before it listed everyone waiting", errUnverifiable)
	}
	if !p.ended {
		return p.out, fmt.Errorf("%w: the log has no end entry (the lottery still runs, or the log was read before it ended)", errUnverifiable)
	}
	p.out.Waiting = p.waiting.len()
	return p.out, nil
}

// checkLotteryStart checks what must hold before any entry is replayed:
// a revealed seed matching the published commitment, and a log that still
// holds its start entry, made under that commitment.
func checkLotteryStart(r lotteryReveal) error {
	if r.Seed == "" {
		return fmt.Errorf("%w: the seed is not revealed yet (state %q): the room still draws by lottery", errUnverifiable, r.State)
	}
	if r.Commitment == "" {
		return fmt.Errorf("%w: this lottery had no commitment published (its seed was made after Redis lost the room)", errUnverifiable)
	}
	sum := sha256.Sum256([]byte(r.Seed))
	if got := hex.EncodeToString(sum[:]); got != r.Commitment {
		return fmt.Errorf("the seed does not match the commitment: SHA-256 is %s, published %s", got, r.Commitment)
	}
	if len(r.Entries) == 0 {
		return fmt.Errorf("%w: the log is empty", errUnverifiable)
	}
	if r.First > 1 || r.Entries[0].ID != 1 {
		return fmt.Errorf("%w: the log no longer holds its start (its oldest entry is %d, the cap trimmed the rest)", errUnverifiable, max(r.First, r.Entries[0].ID))
	}
	start := r.Entries[0]
	if start.Event != "start" {
		return fmt.Errorf("entry 1 is %q, not the start", start.Event)
	}
	if start.Commitment == nil || *start.Commitment != r.Commitment {
		return errors.New("the log began with another seed's commitment")
	}
	return nil
}

// lotteryReplay is the state of a replay between entries: the tickets
// waiting, set aside and come back, as the log has told them so far.
type lotteryReplay struct {
	seed                 string
	out                  replayed
	waiting, aside, back ticketSet
	// known: tickets the log has had waiting. Only a ticket it never had
	// (set aside before the log began) may come back unannounced, and only
	// when the start did not list those set aside then (strict).
	known  map[int64]bool
	strict bool
	// walking: the log is still listing who waited when it began;
	// covered is how far it has listed (nil: nothing yet).
	walking  bool
	covered  *int64
	lastTick int64
	ended    bool
}

// newLotteryReplay starts a replay of seed's log from its start entry.
func newLotteryReplay(seed string, start lotEntry) *lotteryReplay {
	p := &lotteryReplay{
		seed:     seed,
		out:      replayed{Fate: map[int64]string{}},
		known:    map[int64]bool{},
		strict:   start.Aside != nil && start.Back != nil,
		walking:  true,
		lastTick: -1,
	}
	if p.strict {
		for _, t := range *start.Aside {
			p.aside.insert(t)
			p.known[t] = true
		}
		for _, t := range *start.Back {
			p.back.insert(t)
			p.known[t] = true
		}
	}
	return p
}

func (p *lotteryReplay) fail(e lotEntry, format string, args ...any) error {
	return fmt.Errorf("entry %d (%s): %s", e.ID, e.Event, fmt.Sprintf(format, args...))
}

// earlier accepts a ticket the log never had, set aside before it
// began, unless the start listed those (strict).
func (p *lotteryReplay) earlier(e lotEntry, t int64, what string) error {
	if p.known[t] || p.strict {
		return p.fail(e, "ticket %d %s", t, what)
	}
	p.out.Earlier++
	return nil
}

// uncovered reports a ticket the walk has not reached yet, whose changes
// the walk's later slice settles.
func (p *lotteryReplay) uncovered(t int64) bool {
	return p.walking && (p.covered == nil || t > *p.covered)
}

// apply replays entry e, the k-th (0-based) of the log.
func (p *lotteryReplay) apply(k int, e lotEntry) error {
	switch e.Event {
	case "start":
		if k > 0 {
			return p.fail(e, "a second start")
		}
	case "snap":
		return p.snap(e)
	case "add":
		for _, t := range e.Tickets {
			if !p.waiting.insert(t) && !p.uncovered(t) {
				return p.fail(e, "ticket %d added while waiting", t)
			}
			p.out.Fate[t] = "waiting (" + e.Why + ")"
			p.known[t] = true
		}
	case "remove":
		return p.remove(e)
	case "picks":
		return p.picks(e)
	case "pop":
		return p.pop(e)
	case "back":
		return p.comeBack(e)
	case "return":
		return p.admitAhead(e)
	case "end":
		p.ended = true
	default:
		return p.fail(e, "unknown event")
	}
	return nil
}

// snap is one slice of the walk listing who waited when the log began.
func (p *lotteryReplay) snap(e lotEntry) error {
	if !p.walking {
		return p.fail(e, "a walk slice after the walk ended")
	}
	if (p.covered == nil) != (e.After == nil) || (p.covered != nil && *p.covered != *e.After) {
		return p.fail(e, "the slice does not follow the last one")
	}
	p.waiting.removeRange(e.After, e.Upto)
	for _, t := range e.Tickets {
		if !inRange(t, e.After, e.Upto) || !p.waiting.insert(t) {
			return p.fail(e, "ticket %d out of the slice's range or twice", t)
		}
		p.out.Fate[t] = "waiting when the log began"
		p.known[t] = true
	}
	if e.Upto == nil {
		p.walking = false
	} else {
		p.covered = e.Upto
	}
	return nil
}

// remove is tickets that left, wherever they stood.
func (p *lotteryReplay) remove(e lotEntry) error {
	for _, t := range e.Tickets {
		if !p.waiting.remove(t) && !p.aside.remove(t) && !p.back.remove(t) && !p.uncovered(t) {
			if err := p.earlier(e, t, "removed but not waiting"); err != nil {
				return err
			}
		}
		p.out.Fate[t] = "gone (" + e.Why + ")"
	}
	return nil
}

// picks is one tick's draw: each pick is checked against the seed and
// the tickets waiting.
func (p *lotteryReplay) picks(e lotEntry) error {
	if p.walking {
		return p.fail(e, "picks before the log listed everyone waiting")
	}
	if e.Tick == nil || len(e.Picks) == 0 {
		return p.fail(e, "no tick or no picks")
	}
	tick := *e.Tick
	if tick <= p.lastTick {
		return p.fail(e, "tick %d after tick %d", tick, p.lastTick)
	}
	p.lastTick = tick
	p.out.Ticks++
	for j, pk := range e.Picks {
		if err := p.pick(e, tick, int64(j), pk); err != nil {
			return err
		}
	}
	return nil
}

// pick checks pick i of tick: how many it drew among, the rank the seed
// gives and the ticket at that rank.
func (p *lotteryReplay) pick(e lotEntry, tick, i int64, pk lotPick) error {
	if pk.I != i {
		return p.fail(e, "tick %d: pick %d is numbered %d", tick, i, pk.I)
	}
	n := int64(p.waiting.len())
	if e.Below != nil {
		n = int64(p.waiting.below(*e.Below))
	}
	if pk.N != n {
		return p.fail(e, "pick %d of tick %d: the log says %d waiting, the replay has %d", i, tick, pk.N, n)
	}
	rank := lotteryRank(p.seed, tick, i, n)
	if pk.Rank != rank {
		return p.fail(e, "pick %d of tick %d: rank %d, the seed gives %d", i, tick, pk.Rank, rank)
	}
	if t := p.waiting.at(int(rank)); t != pk.Ticket {
		return p.fail(e, "pick %d of tick %d: ticket %d picked, rank %d is ticket %d", i, tick, pk.Ticket, rank, t)
	}
	p.waiting.remove(pk.Ticket)
	p.out.Picks++
	if pk.Away {
		p.aside.insert(pk.Ticket)
		p.out.SetAside++
		p.out.Fate[pk.Ticket] = fmt.Sprintf("picked at tick %d (pick %d of %d waiting), set aside: away", tick, i, n)
	} else {
		p.out.Admitted++
		p.out.Fate[pk.Ticket] = fmt.Sprintf("picked at tick %d (pick %d of %d waiting), admitted", tick, i, n)
	}
	return nil
}

// pop is a priority ticket admitted in order, ahead of the draw.
func (p *lotteryReplay) pop(e lotEntry) error {
	if e.Ticket == nil {
		return p.fail(e, "no ticket")
	}
	t := *e.Ticket
	if !p.walking && (p.waiting.len() == 0 || p.waiting.at(0) != t || t >= 0) {
		return p.fail(e, "ticket %d is not the first priority ticket waiting", t)
	}
	if !p.waiting.remove(t) && !p.uncovered(t) {
		return p.fail(e, "ticket %d admitted while not waiting", t)
	}
	if e.Away != nil && *e.Away {
		p.aside.insert(t)
		p.out.Fate[t] = "priority, set aside: away"
	} else {
		p.out.Fate[t] = "priority, admitted in order"
	}
	return nil
}

// comeBack is set-aside tickets whose visitors came back.
func (p *lotteryReplay) comeBack(e lotEntry) error {
	for _, t := range e.Tickets {
		if p.waiting.has(t) {
			return p.fail(e, "ticket %d came back while waiting", t)
		}
		if !p.aside.remove(t) {
			if err := p.earlier(e, t, "came back but was never set aside"); err != nil {
				return err
			}
		}
		p.back.insert(t)
		p.out.Fate[t] = "came back"
	}
	return nil
}

// admitAhead is come-back tickets admitted ahead of the draw (event
// "return").
func (p *lotteryReplay) admitAhead(e lotEntry) error {
	for _, t := range e.Tickets {
		if p.waiting.has(t) {
			return p.fail(e, "ticket %d admitted ahead of the draw while waiting in it", t)
		}
		if !p.back.remove(t) {
			if err := p.earlier(e, t, "admitted ahead of the draw but never came back"); err != nil {
				return err
			}
		}
		p.out.Fate[t] = "came back, admitted ahead of the draw"
	}
	return nil
}

// runLottery is drawcheck -lottery.
func runLottery(u, file, save, visitor string, out io.Writer) error {
	var r lotteryReveal
	var err error
	switch {
	case u != "" && file == "":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		r, err = fetchLottery(ctx, u)
	case file != "" && u == "":
		var b []byte
		if b, err = os.ReadFile(file); err == nil {
			if err = json.Unmarshal(b, &r); err != nil {
				err = fmt.Errorf("%s: %w", file, err)
			}
		}
	default:
		return errors.New("give -url or -file (one of them)")
	}
	if err != nil {
		return err
	}
	if save != "" {
		b, _ := json.Marshal(r)
		if err := os.WriteFile(save, b, 0o644); err != nil {
			return err
		}
	}
	res, err := replayLottery(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "room %s: commitment %s matches the seed; %d log entries replayed: %d picks over %d ticks agree with the seed (%d admitted, %d set aside as away), %d still waiting at the end\n",
		r.Room, r.Commitment, res.Entries, res.Picks, res.Ticks, res.Admitted, res.SetAside, res.Waiting)
	if res.Earlier > 0 {
		fmt.Fprintf(out, "%d tickets set aside before the log began came back or left\n", res.Earlier)
	}
	if visitor != "" {
		t, err := ticketOf(visitor)
		if err != nil {
			return err
		}
		fate, ok := res.Fate[t]
		if !ok {
			fate = "not named in the log (waiting when it began and never picked, or not of this lottery)"
		}
		fmt.Fprintf(out, "ticket %d: %s\n", t, fate)
	}
	return nil
}

// ticketOf reads a visitor's ticket from its credential
// ("id.room~seq~issuedAt[~p].sig", numbers in base 36) or a plain
// ticket number, as the log writes it (a priority ticket is seq - 10^12).
func ticketOf(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return 0, errors.New("give a ticket number or a credential that carries a ticket (id.room~seq~time.sig)")
	}
	f := strings.Split(parts[1], "~")
	if len(f) < 3 {
		return 0, errors.New("this credential carries no ticket")
	}
	seq, err := strconv.ParseInt(f[1], 36, 64)
	if err != nil {
		return 0, fmt.Errorf("bad ticket in credential: %w", err)
	}
	if len(f) > 3 && f[3] == "p" {
		return seq - 1000000000000, nil
	}
	return seq, nil
}

// fetchLottery reads the lottery endpoint and every page of its log.
func fetchLottery(ctx context.Context, endpoint string) (lotteryReveal, error) {
	var r lotteryReveal
	if err := getJSON(ctx, endpoint, &r); err != nil {
		return r, err
	}
	base, err := url.Parse(strings.TrimSuffix(endpoint, "/") + "/log")
	if err != nil {
		return r, err
	}
	var after int64
	for page := 0; ; page++ {
		if page > 100000 {
			return r, errors.New("too many pages")
		}
		u := *base
		q := u.Query()
		q.Set("after", strconv.FormatInt(after, 10))
		q.Set("limit", "10000")
		u.RawQuery = q.Encode()
		var p struct {
			First   int64      `json:"first"`
			Entries []lotEntry `json:"entries"`
			Next    *int64     `json:"next"`
		}
		if err := getJSON(ctx, u.String(), &p); err != nil {
			return r, err
		}
		if page == 0 {
			r.First = p.First
		}
		r.Entries = append(r.Entries, p.Entries...)
		if p.Next == nil {
			return r, nil
		}
		after = *p.Next
	}
}

// getJSON reads u into v. A server with too many readers of lottery logs
// answers 503 (or 429) with Retry-After: the read waits that long and
// tries again, a few times.
func getJSON(ctx context.Context, u string, v any) error {
	var resp *http.Response
	var body []byte
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
		if err != nil {
			return err
		}
		if resp, err = http.DefaultClient.Do(req); err != nil {
			return err
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		busy := resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests
		wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if !busy || err != nil || wait < 0 || wait > 60 || try >= 10 {
			break
		}
		t := time.NewTimer(time.Duration(wait)*time.Second + 100*time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: http %d: %s", u, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}
