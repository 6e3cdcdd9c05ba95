package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/queue"
)

// effects says in words what changing a room's settings from before to
// after will do, given its counters now: what the dashboard asks the
// operator to confirm. The estimates use the ETA formula every visitor is
// shown (queue.ETAAt) at the configured admission rate.
func (s *server) effects(room string, before, after queue.RoomConfig, st queue.RoomStats) []string {
	b, a := s.effective(room, before), s.effective(room, after)
	waiting := st.Waiting + st.PreQueue
	tick := s.cfg.Capacity.Tick
	perTick := func(n int) string { return fmt.Sprintf("%d per %s", n, tickWords(tick)) }
	last := func(tps float64) string {
		if waiting == 0 {
			return "nobody is waiting now"
		}
		return "ETA for the last in line " + durWords(queue.ETAAt(waiting, tps))
	}
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	switch {
	case b.Strategy != a.Strategy && a.Strategy == queue.StrategyMaxActive:
		add("%s → %s: at most %d hold an entry token at once (%d do now); a place frees when a token is used up or expires, up to %s",
			b.Strategy, a.Strategy, a.MaxActive, st.ActiveTokens, perTick(a.Batch))
	case b.Strategy != a.Strategy:
		add("%s → %s: %s whatever is active, about %s admitted/s; %s → %s",
			b.Strategy, a.Strategy, perTick(a.Batch), num(a.TPS), last(b.TPS), durWordsOf(waiting, a.TPS))
	case b.Batch != a.Batch:
		add("%s → %s: about %s admitted/s; %s → %s", perTick(b.Batch), perTick(a.Batch), num(a.TPS), last(b.TPS), durWordsOf(waiting, a.TPS))
	}
	if b.MaxActive != a.MaxActive && a.Strategy == queue.StrategyMaxActive && b.Strategy == a.Strategy {
		add("at most %d → %d hold an entry token at once (%d do now)", b.MaxActive, a.MaxActive, st.ActiveTokens)
	}
	if b.Paused != a.Paused {
		if a.Paused {
			add("admissions stop; the %d waiting keep their places and see the room paused", waiting)
		} else {
			add("admissions resume at %s; %s", perTick(a.Batch), last(a.TPS))
		}
	}
	if b.Seats != a.Seats {
		switch {
		case a.Seats == 0:
			add("seats %d → no limit: the room never sells out", b.Seats)
		case int64(a.Seats) <= st.SeatsHeld:
			add("seats %s → %d with %d held: the room is sold out at once for the %d waiting", seatWords(b.Seats), a.Seats, st.SeatsHeld, waiting)
		default:
			add("seats %s → %d with %d held: sold out after %d more admissions", seatWords(b.Seats), a.Seats, st.SeatsHeld, int64(a.Seats)-st.SeatsHeld)
		}
	}
	if ptr(b.OpensAt) != ptr(a.OpensAt) {
		if a.OpensAt == nil {
			add("no opening time: joins enter the queue at once")
		} else {
			t, _ := time.Parse(time.RFC3339Nano, *a.OpensAt)
			when := "in " + durWords(int64(time.Until(t).Seconds()))
			if !t.After(time.Now()) {
				when = "now (the time is past)"
			}
			add("opens at %s, %s; joins before then wait in the pre-queue and are drawn at random at opening", t.UTC().Format(time.RFC3339), when)
		}
	}
	if b.TokenTTLSeconds != a.TokenTTLSeconds {
		add("new entry tokens last %s → %s idle (each use extends them)", durWords(int64(b.TokenTTLSeconds)), durWords(int64(a.TokenTTLSeconds)))
	}
	if b.TokenMaxSeconds != a.TokenMaxSeconds {
		add("new entry tokens last at most %s → %s", durWords(int64(b.TokenMaxSeconds)), durWords(int64(a.TokenMaxSeconds)))
	}
	if b.FailMode != a.FailMode {
		if a.FailMode == queue.FailOpen {
			add("fail mode %s → %s: while Redis is unreachable the protected endpoint admits through a local limiter at the room's rate", b.FailMode, a.FailMode)
		} else {
			add("fail mode %s → %s: while Redis is unreachable the protected endpoint admits nobody", b.FailMode, a.FailMode)
		}
	}
	if b.JoinRate != a.JoinRate || b.JoinBurst != a.JoinBurst {
		add("each client address may create %s → %s new visitors per second, %d → %d at once", num(b.JoinRate), num(a.JoinRate), b.JoinBurst, a.JoinBurst)
	}
	if b.PowBits != a.PowBits {
		if a.PowBits == 0 {
			add("proof of work %d → 0 bits: joins need no proof of work", b.PowBits)
		} else {
			add("proof of work %d → %d bits: each new visitor's join costs about %s hashes", b.PowBits, a.PowBits, num(math.Pow(2, float64(a.PowBits))))
		}
	}
	if b.Method != a.Method {
		switch a.Method {
		case queue.MethodPassthrough:
			add("method %s → %s: a join is admitted at once with a token; the %d waiting go at the next tick", b.Method, a.Method, waiting)
		case queue.MethodRandom:
			add("method %s → %s: the %d waiting keep their tickets and are drawn at random, %s, among those present; each is shown the draw's size and chance per minute instead of a place", b.Method, a.Method, waiting, perTick(a.Batch))
		case queue.MethodReject:
			add("method %s → %s: new visitors are turned away with the room's message; the %d waiting go on", b.Method, a.Method, waiting)
		default:
			add("method %s → %s: tickets are admitted in order at %s", b.Method, a.Method, perTick(a.Batch))
		}
	}
	if b.Presence != a.Presence || b.AwayAfterSeconds != a.AwayAfterSeconds || b.DropAfterSeconds != a.DropAfterSeconds {
		if a.Presence {
			add("presence on: a visitor unseen for %s is set aside (keeps the ticket), after %s loses the place", durWords(int64(a.AwayAfterSeconds)), durWords(int64(a.DropAfterSeconds)))
		} else {
			add("presence off: visitors keep their places however long they are away")
		}
	}
	if b.InviteOnly != a.InviteOnly {
		if a.InviteOnly {
			add("invite-only: a new visitor needs an invite code; the %d waiting keep their places", waiting)
		} else {
			add("open to everyone: joins need no invite code")
		}
	}
	if b.Message != a.Message {
		if a.Message == "" {
			add("the message is removed for everyone waiting (%d)", waiting)
		} else {
			add("everyone waiting (%d) sees at once: %q", waiting, a.Message)
		}
	}
	if len(out) == 0 {
		out = append(out, "no change")
	}
	return out
}

func ptr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func seatWords(n int) string {
	if n == 0 {
		return "no limit"
	}
	return strconv.Itoa(n)
}

// durWordsOf is the ETA of the last of waiting at tps, in words.
func durWordsOf(waiting int64, tps float64) string {
	if waiting == 0 {
		return "nobody is waiting now"
	}
	return durWords(queue.ETAAt(waiting, tps))
}

// durWords writes seconds as an operator reads them: 45 s, 4 min, 1 h 5 min.
func durWords(sec int64) string {
	switch {
	case sec < 0:
		sec = 0
		fallthrough
	case sec < 60:
		return fmt.Sprintf("%d s", sec)
	case sec < 3600:
		return fmt.Sprintf("%d min", (sec+59)/60)
	}
	h, m := sec/3600, (sec%3600+59)/60
	if m == 60 {
		h, m = h+1, 0
	}
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

func tickWords(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return durWords(int64(d.Seconds()))
}

// num writes a rate without needless decimals.
func num(f float64) string {
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}
