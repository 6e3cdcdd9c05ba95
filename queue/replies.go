package queue

import (
	"fmt"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// This file is the one place where the scripts' array replies are read:
// each script whose reply is a fixed list of numbers has a struct whose
// fields follow the order the script builds them in (the comment at the
// top of each script lists the same order), and a decode function that
// checks the reply's shape.

// joinReply is the reply of join.lua (and of invite.lua when it refuses
// first): {code, a, b, new, paused, settings, message, seq, now, draw,
// prio}. The last four are there only for some codes: seq and now when the
// visitor waits in the queue, draw (waiting only) and prio for a ticket.
type joinReply struct {
	Code     int64 // replyWaiting, replyAdmitted, ...
	A, B     int64 // meaning set by Code, see the reply constants
	New      bool  // a ticket or pre-queue place was taken by this call
	Paused   bool
	Settings int64  // the room's settings version
	Message  string // the room's message to the waiting, "" for none
	Seq      int64  // the waiting visitor's ticket, 0 when there is none
	Now      int64  // Redis time (Unix ms) the ticket was read at
	HasDraw  bool   // Draw was in the reply
	Draw     int64  // size of a random room's lottery, -1 when not random
	Prio     bool   // the ticket is of the priority band
}

// joinReplyMin is how many fields every join reply has.
const joinReplyMin = 7

func decodeJoin(v any) (joinReply, error) {
	n, err := asInts(v, joinReplyMin)
	if err != nil {
		return joinReply{}, err
	}
	r := joinReply{Code: n[0], A: n[1], B: n[2], New: n[3] == 1, Paused: n[4] == 1,
		Settings: n[5], Message: stringAt(v, 6)}
	if len(n) >= 9 {
		r.Seq, r.Now = n[7], n[8]
	}
	if len(n) >= 10 {
		r.HasDraw, r.Draw = true, n[9]
	}
	r.Prio = len(n) >= 11 && n[10] == 1
	return r, nil
}

// statusReply is the reply of status.lua: a room header {rate*1000,
// paused, soldOut, opensAt, waiting, settings, message, draw}, then
// {code, a, b} for each visitor asked about, in the order asked.
type statusReply struct {
	RateMilli int64 // admissions per 1000 s
	Paused    bool
	SoldOut   bool
	OpensAt   int64 // Unix ms, 0 for none
	Waiting   int64
	Settings  int64
	Message   string
	Draw      int64 // size of a random room's lottery, -1 when not random
	Visitors  []visitorReply
}

// visitorReply is one visitor's part of a status reply.
type visitorReply struct {
	Code, A, B int64
}

// statusHeader is the length of the status script's room header.
const statusHeader = 8

func decodeStatus(v any, visitors int) (statusReply, error) {
	n, err := asInts(v, statusHeader+3*visitors)
	if err != nil {
		return statusReply{}, err
	}
	r := statusReply{RateMilli: n[0], Paused: n[1] == 1, SoldOut: n[2] == 1, OpensAt: n[3],
		Waiting: n[4], Settings: n[5], Message: stringAt(v, 6), Draw: n[7],
		Visitors: make([]visitorReply, visitors)}
	for i := range r.Visitors {
		e := n[statusHeader+3*i:]
		r.Visitors[i] = visitorReply{Code: e[0], A: e[1], B: e[2]}
	}
	return r, nil
}

// consumeReply is the reply of consume.lua: {code, a, cap}; cap only with
// consumeOK.
type consumeReply struct {
	Code int64 // consumeOK, consumeUnknown, ...
	A    int64 // expiresAt (Unix ms) when OK, the wait in ms when too early
	Cap  int64 // the token's latest possible expiry when OK, else 0
}

func decodeConsume(v any) (consumeReply, error) {
	n, err := asInts(v, 2)
	if err != nil {
		return consumeReply{}, err
	}
	r := consumeReply{Code: n[0], A: n[1]}
	if len(n) >= 3 {
		r.Cap = n[2]
	}
	return r, nil
}

// decodePresenceStats reads the reply of presencestats.lua: {on,
// waitingPresent, away, back, reclaimed/min, skipped/min, dropped/min,
// reclaimed, skipped, dropped, madeup/min, madeup}, whose fields are
// PresenceStats'.
func decodePresenceStats(v any) (PresenceStats, error) {
	n, err := asInts(v, 12)
	if err != nil {
		return PresenceStats{}, err
	}
	return PresenceStats{
		On: n[0] == 1, WaitingPresent: n[1], Away: n[2], Back: n[3],
		ReclaimedPerMinute: n[4], SkippedPerMinute: n[5], DroppedPerMinute: n[6],
		ReclaimedTotal: n[7], SkippedTotal: n[8], DroppedTotal: n[9],
		MadeUpPerMinute: n[10], MadeUpTotal: n[11],
	}, nil
}

// decodeRetake reads the reply of retake.lua: {restored, retaken,
// removed}, for room.
func decodeRetake(v any, room string) (Restored, error) {
	n, err := asInts(v, 3)
	if err != nil {
		return Restored{}, err
	}
	return Restored{Room: room, Settings: n[0] == 1, Tickets: int(n[1]), Removed: int(n[2])}, nil
}

// decodeRoomStats reads the reply of roomstats.lua: {waiting, prequeue,
// activeTokens, admittedTotal, seatsHeld, rate*1000, priority}; priority
// is missing from a script older than the band.
func decodeRoomStats(v any) (RoomStats, error) {
	n, err := asInts(v, 6)
	if err != nil {
		return RoomStats{}, err
	}
	st := RoomStats{Waiting: n[0], PreQueue: n[1], ActiveTokens: n[2], AdmittedTotal: n[3],
		SeatsHeld: n[4], Rate: float64(n[5]) / 1000}
	if len(n) > 6 {
		st.Priority = n[6]
	}
	return st, nil
}

// admitReply is the reply of admit.lua: {taken, tick, admitted, waiting,
// event, head, born, draw, phead, paused, done}. The fields after event
// may be missing (a reply of the first five only); the Has fields say
// which were there.
type admitReply struct {
	Taken    bool // false: another caller already took this tick
	Tick     int64
	Admitted int64  // how many this tick admitted
	Waiting  int64  // left in the queue
	Event    string // the published admission event, "" when none
	HasHead  bool   // Head and Born were in the reply
	Head     int64  // the last admitted ticket, 0 for none
	Born     int64  // when the room's state began (Unix ms)
	HasDraw  bool   // Draw was in the reply
	Draw     int64  // the lottery's size after the tick, -1: not random
	PHead    int64  // the last admitted priority ticket, 0 for none
	Paused   bool
	Done     string // the scores of the tickets done with, comma-separated
}

// admitReplyMin is how many fields every admit reply has.
const admitReplyMin = 5

func decodeAdmit(v any) (admitReply, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < admitReplyMin {
		return admitReply{}, fmt.Errorf("unexpected reply %v", v)
	}
	at := func(i int) int64 {
		if i >= len(arr) {
			return 0
		}
		n, _ := asInt(arr[i])
		return n
	}
	r := admitReply{Taken: at(0) == 1, Tick: at(1), Admitted: at(2), Waiting: at(3),
		Event: stringAt(arr, 4), HasHead: len(arr) > 6, Head: at(5), Born: at(6),
		HasDraw: len(arr) > 7, Draw: at(7), PHead: at(8), Paused: at(9) == 1, Done: stringAt(arr, 10)}
	return r, nil
}

// The replies below mix strings and nested arrays; each decoder checks
// every member's type and names its script when the shape is wrong.

// revealReply is the reply of reveal.lua: {seed, commit, committedAt,
// openedAt, n, doneAt, ids}. The times are Unix ms written as strings
// ("0" for none); Seed is "" when the room has no draw.
type revealReply struct {
	Seed        string
	Commitment  string
	CommittedAt time.Time // zero when missing
	OpenedAt    time.Time // zero until the draw has run
	Count       int64     // visitors in the draw, 0 when not a number
	DoneAt      string    // "" while the draw is still placing visitors
	IDs         []string  // the sorted ids asked for
}

func decodeReveal(v any) (revealReply, error) {
	s, rest, err := replyStrings("reveal", v, 6, 1)
	if err != nil {
		return revealReply{}, err
	}
	ids, err := stringList("reveal", rest[0])
	if err != nil {
		return revealReply{}, err
	}
	count, _ := strconv.ParseInt(s[4], 10, 64)
	return revealReply{Seed: s[0], Commitment: s[1], CommittedAt: millis(s[2]), OpenedAt: millis(s[3]),
		Count: count, DoneAt: s[5], IDs: ids}, nil
}

// lotteryReply is the reply of lottery.lua: {seed, commit, at, endedAt},
// the times as for revealReply; Seed is "" when there is none.
type lotteryReply struct {
	Seed        string
	Commitment  string
	CommittedAt time.Time
	EndedAt     time.Time // zero while the lottery goes on
}

func decodeLottery(v any) (lotteryReply, error) {
	s, _, err := replyStrings("lottery", v, 4, 0)
	if err != nil {
		return lotteryReply{}, err
	}
	return lotteryReply{Seed: s[0], Commitment: s[1], CommittedAt: millis(s[2]), EndedAt: millis(s[3])}, nil
}

// tickRoomsReply is the reply of tickrooms.lua: {sample, alive,
// flags...}, one flag for each configured room asked about.
type tickRoomsReply struct {
	Sample []string // the sampled rooms, invalid names left out
	Alive  string   // the alive marker, "" when it is gone
	In     []bool   // In[i]: configured room i has waiting visitors
}

func decodeTickRooms(v any, configured int) (tickRoomsReply, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != configured+2 {
		return tickRoomsReply{}, fmt.Errorf("tickrooms: unexpected reply %v", v)
	}
	sample, err := stringList("tickrooms", arr[0])
	if err != nil {
		return tickRoomsReply{}, err
	}
	alive, ok := arr[1].(string)
	if !ok {
		return tickRoomsReply{}, fmt.Errorf("tickrooms: unexpected alive marker %T %v", arr[1], arr[1])
	}
	r := tickRoomsReply{Sample: sample[:0], Alive: alive, In: make([]bool, configured)}
	for _, s := range sample {
		if wire.ValidRoom(s) {
			r.Sample = append(r.Sample, s)
		}
	}
	for i, f := range arr[2:] {
		n, err := asInt(f)
		if err != nil {
			return tickRoomsReply{}, fmt.Errorf("tickrooms: flag %d: %w", i, err)
		}
		r.In[i] = n == 1
	}
	return r, nil
}

// logRow is one row of an XRANGE reply of the lottery log: {id, {field,
// value, ...}}.
type logRow struct {
	ID     string
	Fields []string // field, value, field, value, ...
}

// size is the row's size in bytes, as a page of the log counts it: the
// id, and each field and value with one byte more.
func (r logRow) size() int {
	n := len(r.ID)
	for _, f := range r.Fields {
		n += len(f) + 1
	}
	return n
}

// decodeLogRows reads an XRANGE reply of the lottery log; nil is no row.
func decodeLogRows(v any) ([]logRow, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("lottery log: unexpected reply %T %v", v, v)
	}
	rows := make([]logRow, len(arr))
	for i, e := range arr {
		pair, ok := e.([]any)
		if !ok || len(pair) < 2 {
			return nil, fmt.Errorf("lottery log: unexpected entry %v", e)
		}
		id, ok := pair[0].(string)
		if !ok {
			return nil, fmt.Errorf("lottery log: unexpected entry id %T %v", pair[0], pair[0])
		}
		fields, err := stringList("lottery log", pair[1])
		if err != nil {
			return nil, err
		}
		rows[i] = logRow{ID: id, Fields: fields}
	}
	return rows, nil
}

// replyStrings checks that v is an array of at least n strings followed
// by extra more members of any type, and returns the strings and the rest.
func replyStrings(script string, v any, n, extra int) ([]string, []any, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < n+extra {
		return nil, nil, fmt.Errorf("%s: unexpected reply %v", script, v)
	}
	s := make([]string, n)
	for i := range s {
		if s[i], ok = arr[i].(string); !ok {
			return nil, nil, fmt.Errorf("%s: unexpected member %d %T %v", script, i, arr[i], arr[i])
		}
	}
	return s, arr[n:], nil
}

// stringList reads a nested array of strings; nil is an empty one.
func stringList(script string, v any) ([]string, error) {
	if v == nil {
		return []string{}, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected list %T %v", script, v, v)
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		if out[i], ok = e.(string); !ok {
			return nil, fmt.Errorf("%s: unexpected list member %T %v", script, e, e)
		}
	}
	return out, nil
}

// millis reads a Unix time in milliseconds; the zero time for "0" or what
// is not a number.
func millis(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
