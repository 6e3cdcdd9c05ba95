package queue

import "fmt"

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
