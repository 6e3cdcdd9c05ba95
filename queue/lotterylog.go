package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/wire"
)

// The lottery's log: in a room whose method is random, every change of who
// waits is appended to a capped Redis stream in the room's slot, by the
// script that makes it (scripts/lotlog.lua), so that with the seed, once
// revealed, anyone can replay the lottery ticket by ticket: rebuild the
// waiting tickets, recompute each pick's rank with LotteryRank and see the
// picked ticket stand at that rank. Entries carry tickets (queue scores:
// the ticket number, or ticket - 10^12 in the priority band), never
// visitor ids.

// LotteryLogMax is how many entries the log keeps (XADD MAXLEN ~): past
// it the oldest go, and the log can no longer be replayed from its start,
// which a reader sees as a first entry numbered above 1. An entry is a
// join, a leave, … or one tick's picks: a lottery of a million joins fits
// whole. Measured: about 32 bytes an entry of one ticket and 24 bytes a
// pick, so a full log holds about 64 MB.
const LotteryLogMax = 2000000

// Kinds of lottery log entries (LotteryEntry.Event).
const (
	LogStart  = "start"  // the log begins: Commitment, At, Aside, Back
	LogSnap   = "snap"   // who waited when it began: Tickets in (After, Upto]
	LogAdd    = "add"    // Tickets entered the queue (Why: join, open, restore)
	LogRemove = "remove" // Tickets left the queue or the set-aside (Why: leave, drop, restore, upgrade)
	LogPicks  = "picks"  // the Picks of Tick, in order (Below)
	LogPop    = "pop"    // a priority Ticket admitted in order before the draw (Away)
	LogBack   = "back"   // set-aside Tickets whose visitors came back
	LogReturn = "return" // Tickets that came back, admitted ahead of the draw
	LogEnd    = "end"    // the room left the random method
)

// LotteryEntry is one entry of a lottery's log. Which fields are set
// depends on Event; a nil pointer is a field the entry does not have
// (After and Upto: no bound).
type LotteryEntry struct {
	ID         int64         `json:"id"` // 1, 2, … with no gap
	Event      string        `json:"event"`
	Why        string        `json:"why,omitempty"`
	Commitment *string       `json:"commitment,omitempty"`
	At         *int64        `json:"at,omitempty"` // Unix ms
	Tick       *int64        `json:"tick,omitempty"`
	Ticket     *int64        `json:"ticket,omitempty"`
	Away       *bool         `json:"away,omitempty"`
	Below      *int64        `json:"below,omitempty"`
	After      *int64        `json:"after,omitempty"`
	Upto       *int64        `json:"upto,omitempty"`
	Tickets    []int64       `json:"tickets,omitempty"`
	Picks      []LotteryPick `json:"picks,omitempty"`
	// Aside and Back (start): the tickets set aside and come back when
	// the log began; nil when there were too many to list.
	Aside *[]int64 `json:"aside,omitempty"`
	Back  *[]int64 `json:"back,omitempty"`
}

// LotteryPick is pick I (0-based, every pick of the tick) of a tick:
// among N waiting (in ticket order), the ticket at Rank; Away when it was
// set aside instead of admitted.
type LotteryPick struct {
	I      int64 `json:"i"`
	N      int64 `json:"n"`
	Rank   int64 `json:"rank"`
	Ticket int64 `json:"ticket"`
	Away   bool  `json:"away"`
}

// LotteryLog is one page of a lottery's log.
type LotteryLog struct {
	First   int64 // the oldest entry kept (0: none); above 1 when trimmed
	Entries []LotteryEntry
	// More is true when the page stopped at its limit or its byte bound
	// with entries left after it: the next page reads on after the last.
	More bool
}

// Bounds of one page of the log. An entry is small (a join) to tens of KB
// (a snap of LOT_SLICE tickets, a big tick's picks), so a page is bounded
// in bytes as well as in entries: lotteryPageBytes of entry data (about
// 2.5 times that as JSON at most, picks being the wordiest), read with
// plain XRANGE calls of lotteryCallBytes each at most, so that no single
// call holds Redis for more than a fraction of a millisecond and readers
// of a big log interleave with the ticks.
const (
	lotteryPageBytes = 1 << 20
	lotteryCallBytes = 128 << 10
	lotteryCallMax   = 512 // entries per XRANGE call
)

// ReadLotteryLog returns up to limit entries of room's lottery log after
// the entry numbered after (0: from the start), fewer when they add up to
// more than the page's byte bound (More says whether entries remain).
// It reads with bounded XRANGE calls, not a script.
func (q *Queue) ReadLotteryLog(ctx context.Context, room string, after int64, limit int) (LotteryLog, error) {
	if !wire.ValidRoom(room) {
		return LotteryLog{}, wire.ErrInvalidRoom
	}
	key := prefix(room) + "lotlog"
	var out LotteryLog
	// The oldest entry kept: XINFO would send the first and last entries
	// whole; an XRANGE of one sends only the first.
	v, err := q.r.Do(ctx, "XRANGE", key, "-", "+", "COUNT", "1")
	if err != nil {
		return LotteryLog{}, fmt.Errorf("queue: lottery log: %w", err)
	}
	rows, err := decodeLogRows(v)
	if err != nil {
		return LotteryLog{}, fmt.Errorf("queue: %w", err)
	}
	if len(rows) > 0 {
		e, err := parseLotteryEntry(rows[0].ID, rows[0].Fields)
		if err != nil {
			return LotteryLog{}, err
		}
		out.First = e.ID
	}
	out.Entries = make([]LotteryEntry, 0, min(limit, 64))
	from := after + 1
	// The first call reads a few entries, which tell the size of the next
	// calls.
	used, biggest := 0, lotteryCallBytes/8
	for len(out.Entries) < limit {
		if used >= lotteryPageBytes {
			out.More = true
			break
		}
		n := min(limit-len(out.Entries), lotteryCallMax, max(1, min(lotteryCallBytes, lotteryPageBytes-used)/biggest))
		v, err := q.r.Do(ctx, "XRANGE", key, strconv.FormatInt(from, 10)+"-0", "+", "COUNT", strconv.Itoa(n))
		if err != nil {
			return LotteryLog{}, fmt.Errorf("queue: lottery log: %w", err)
		}
		rows, err := decodeLogRows(v)
		if err != nil {
			return LotteryLog{}, fmt.Errorf("queue: %w", err)
		}
		for _, row := range rows {
			e, err := parseLotteryEntry(row.ID, row.Fields)
			if err != nil {
				return LotteryLog{}, err
			}
			size := row.size()
			out.Entries = append(out.Entries, e)
			used += size
			biggest = max(biggest, size)
			from = e.ID + 1
		}
		if len(rows) < n {
			return out, nil // the end of the log
		}
	}
	if !out.More {
		// At the limit: whether anything follows.
		v, err := q.r.Do(ctx, "XRANGE", key, strconv.FormatInt(from, 10)+"-0", "+", "COUNT", "1")
		if err != nil {
			return LotteryLog{}, fmt.Errorf("queue: lottery log: %w", err)
		}
		rows, err := decodeLogRows(v)
		if err != nil {
			return LotteryLog{}, fmt.Errorf("queue: %w", err)
		}
		out.More = len(rows) > 0
	}
	return out, nil
}

// entryNumber reads a log entry id, "N-0".
func entryNumber(id string) (int64, error) {
	n, _, _ := strings.Cut(id, "-")
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("queue: lottery log: bad entry id %q", id)
	}
	return v, nil
}

// parseLotteryEntry reads the entry of a log row: its id and its field,
// value list.
func parseLotteryEntry(id string, fields []string) (LotteryEntry, error) {
	n, err := entryNumber(id)
	if err != nil {
		return LotteryEntry{}, err
	}
	e := LotteryEntry{ID: n}
	bad := func(f, v string) (LotteryEntry, error) {
		return LotteryEntry{}, fmt.Errorf("queue: lottery log: entry %s: bad %s %q", id, f, v)
	}
	num := func(f, v string) (*int64, bool) {
		if v == "" {
			return nil, true
		}
		x, err := strconv.ParseInt(v, 10, 64)
		return &x, err == nil
	}
	for i := 0; i+1 < len(fields); i += 2 {
		f, v := fields[i], fields[i+1]
		var ok = true
		switch f {
		case "e":
			e.Event = v
		case "why":
			e.Why = v
		case "commit":
			c := v
			e.Commitment = &c
		case "at":
			e.At, ok = num(f, v)
		case "tick":
			e.Tick, ok = num(f, v)
		case "picks":
			for j, p := range strings.Split(v, ",") {
				var x [4]int64
				parts := strings.Split(p, ":")
				if len(parts) != 4 {
					return bad(f, p)
				}
				for k, s := range parts {
					if x[k], err = strconv.ParseInt(s, 10, 64); err != nil {
						return bad(f, p)
					}
				}
				e.Picks = append(e.Picks, LotteryPick{I: int64(j), N: x[0], Rank: x[1], Ticket: x[2], Away: x[3] == 1})
			}
		case "ticket":
			e.Ticket, ok = num(f, v)
		case "below":
			e.Below, ok = num(f, v)
		case "after":
			e.After, ok = num(f, v)
		case "upto":
			e.Upto, ok = num(f, v)
		case "away":
			a := v == "1"
			e.Away = &a
		case "tickets", "aside", "back":
			ts, err := parseTickets(v)
			if err != nil {
				return bad(f, v)
			}
			switch f {
			case "tickets":
				e.Tickets = ts
			case "aside":
				e.Aside = &ts
			default:
				e.Back = &ts
			}
		}
		if !ok {
			return bad(f, v)
		}
	}
	if e.Event == "" {
		return LotteryEntry{}, fmt.Errorf("queue: lottery log: entry %s has no event", id)
	}
	return e, nil
}

// parseTickets reads a comma-separated list of tickets ("" = none).
func parseTickets(v string) ([]int64, error) {
	if v == "" {
		return []int64{}, nil
	}
	parts := strings.Split(v, ",")
	out := make([]int64, len(parts))
	for i, s := range parts {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}
