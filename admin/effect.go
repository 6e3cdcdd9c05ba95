package admin

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

// Effects says in words what changing a room's settings from before to
// after will do, given its counters now: what the dashboard asks the
// operator to confirm. The estimates use the ETA formula every visitor is
// shown (queue.ETAAt) at the configured admission rate. Each rule of
// effectRules speaks for the settings it names.
func Effects(before, after View, st queue.RoomStats) []string {
	e := effectEnv{b: before, a: after, st: st, waiting: st.Waiting + st.PreQueue, tick: after.Tick}
	var out []string
	for _, r := range effectRules {
		if line := r.say(e); line != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		out = append(out, "no change")
	}
	return out
}

// effectEnv is what an effect is worked out from: the room's settings
// before and after (with the instance defaults) and its counters now.
type effectEnv struct {
	b, a    View
	st      queue.RoomStats
	waiting int64
	tick    time.Duration
}

func (e effectEnv) perTick(n int) string { return fmt.Sprintf("%d per %s", n, tickWords(e.tick)) }

// last is the ETA of the last in line at tps, in words.
func (e effectEnv) last(tps float64) string {
	if e.waiting == 0 {
		return "nobody is waiting now"
	}
	return "ETA for the last in line " + durWords(queue.ETAAt(e.waiting, tps))
}

// effectRule says in words what a change of the settings it names does
// ("" for nothing to say).
type effectRule struct {
	fields []string
	say    func(effectEnv) string
}

// silentSettings are the settings whose change has no effect to confirm
// beside the change itself: the page's look.
var silentSettings = []string{"brandTitle", "brandLogo", "brandAccent", "brandBackground", "brandFooter"}

// effectRules are in the order the preview lists the effects; every
// setting is named by one rule or by silentSettings.
var effectRules = []effectRule{
	{[]string{"strategy", "batch"}, strategyEffect},
	{[]string{"maxActive"}, func(e effectEnv) string {
		b, a := e.b.Settings, e.a.Settings
		if b.MaxActive == a.MaxActive || a.Strategy != settings.StrategyMaxActive || b.Strategy != a.Strategy {
			return ""
		}
		return fmt.Sprintf("at most %d → %d hold an entry token at once (%d do now)", b.MaxActive, a.MaxActive, e.st.ActiveTokens)
	}},
	{[]string{"paused"}, pausedEffect},
	{[]string{"seats"}, seatsEffect},
	{[]string{"opensAt"}, opensAtEffect},
	{[]string{"tokenTtlSeconds"}, func(e effectEnv) string {
		b, a := e.b.Settings.TokenTTL, e.a.Settings.TokenTTL
		if b == a {
			return ""
		}
		return fmt.Sprintf("new entry tokens last %s → %s idle (each use extends them)", durWords(int64(b.Seconds())), durWords(int64(a.Seconds())))
	}},
	{[]string{"tokenMaxSeconds"}, func(e effectEnv) string {
		b, a := e.b.Settings.TokenMax, e.a.Settings.TokenMax
		if b == a {
			return ""
		}
		return fmt.Sprintf("new entry tokens last at most %s → %s", durWords(int64(b.Seconds())), durWords(int64(a.Seconds())))
	}},
	{[]string{"failMode"}, failModeEffect},
	{[]string{"joinRate", "joinBurst"}, func(e effectEnv) string {
		b, a := e.b.Settings, e.a.Settings
		if b.JoinRate == a.JoinRate && b.JoinBurst == a.JoinBurst {
			return ""
		}
		return fmt.Sprintf("each client address may create %s → %s new visitors per second, %d → %d at once", num(b.JoinRate), num(a.JoinRate), b.JoinBurst, a.JoinBurst)
	}},
	{[]string{"powBits"}, powEffect},
	{[]string{"method"}, methodEffect},
	{[]string{"activation"}, activationEffect},
	{[]string{"presence", "awayAfterSeconds", "dropAfterSeconds"}, presenceEffect},
	{[]string{"inviteOnly"}, inviteEffect},
	{[]string{"message"}, messageEffect},
	{[]string{"autopilot", "latencyTarget", "maxErrorRate", "minRate", "maxRate"}, autopilotEffect},
}

func autopilotEffect(e effectEnv) string {
	b, a := e.b.Settings, e.a.Settings
	lb, la := b.EffectiveAutopilot(), a.EffectiveAutopilot()
	unit := "admissions/s"
	if a.Strategy == settings.StrategyMaxActive {
		unit = "slots"
	}
	switch {
	case b.Autopilot && !a.Autopilot:
		return "autopilot off: the room keeps the rate it last set; you set it from now on"
	case !a.Autopilot && lb == la:
		return ""
	case !a.Autopilot:
		return "the autopilot's limits change, used once it is on"
	case !b.Autopilot:
		return fmt.Sprintf("autopilot on: every second the rate is set from the origin's p95 latency (target %d ms) and errors (at most %s), within %s–%s %s",
			la.LatencyTarget.Milliseconds(), num(la.MaxErrorRate), num(la.MinRate), num(la.MaxRate), unit)
	case lb == la:
		return ""
	}
	return fmt.Sprintf("autopilot: p95 target %d → %d ms, errors at most %s → %s, rate within %s–%s → %s–%s %s",
		lb.LatencyTarget.Milliseconds(), la.LatencyTarget.Milliseconds(), num(lb.MaxErrorRate), num(la.MaxErrorRate),
		num(lb.MinRate), num(lb.MaxRate), num(la.MinRate), num(la.MaxRate), unit)
}

func strategyEffect(e effectEnv) string {
	b, a := e.b.Settings, e.a.Settings
	switch {
	case b.Strategy != a.Strategy && a.Strategy == settings.StrategyMaxActive:
		return fmt.Sprintf("%s → %s: at most %d hold an entry token at once (%d do now); a place frees when a token is used up or expires, up to %s",
			b.Strategy, a.Strategy, a.MaxActive, e.st.ActiveTokens, e.perTick(a.Batch))
	case b.Strategy != a.Strategy:
		return fmt.Sprintf("%s → %s: %s whatever is active, about %s admitted/s; %s → %s",
			b.Strategy, a.Strategy, e.perTick(a.Batch), num(e.a.TPS), e.last(e.b.TPS), durWordsOf(e.waiting, e.a.TPS))
	case b.Batch != a.Batch:
		return fmt.Sprintf("%s → %s: about %s admitted/s; %s → %s", e.perTick(b.Batch), e.perTick(a.Batch), num(e.a.TPS), e.last(e.b.TPS), durWordsOf(e.waiting, e.a.TPS))
	}
	return ""
}

func pausedEffect(e effectEnv) string {
	switch {
	case e.b.Settings.Paused == e.a.Settings.Paused:
		return ""
	case e.a.Settings.Paused:
		return fmt.Sprintf("admissions stop; the %d waiting keep their places and see the room paused", e.waiting)
	}
	return fmt.Sprintf("admissions resume at %s; %s", e.perTick(e.a.Settings.Batch), e.last(e.a.TPS))
}

func seatsEffect(e effectEnv) string {
	b, a, held := e.b.Settings.Seats, e.a.Settings.Seats, e.st.SeatsHeld
	switch {
	case b == a:
		return ""
	case a == 0:
		return fmt.Sprintf("seats %d → no limit: the room never sells out", b)
	case int64(a) <= held:
		return fmt.Sprintf("seats %s → %d with %d held: the room is sold out at once for the %d waiting", seatWords(b), a, held, e.waiting)
	}
	return fmt.Sprintf("seats %s → %d with %d held: sold out after %d more admissions", seatWords(b), a, held, int64(a)-held)
}

func opensAtEffect(e effectEnv) string {
	t := e.a.Settings.OpensAt
	switch {
	case e.b.Settings.OpensAt.Equal(t):
		return ""
	case t.IsZero():
		return "no opening time: joins enter the queue at once"
	}
	when := "in " + durWords(int64(time.Until(t).Seconds()))
	if !t.After(time.Now()) {
		when = "now (the time is past)"
	}
	return fmt.Sprintf("opens at %s, %s; joins before then wait in the pre-queue and are drawn at random at opening", t.UTC().Format(time.RFC3339), when)
}

func failModeEffect(e effectEnv) string {
	b, a := e.b.Settings.FailMode, e.a.Settings.FailMode
	switch {
	case b == a:
		return ""
	case a == settings.FailOpen:
		return fmt.Sprintf("fail mode %s → %s: while Redis is unreachable the protected endpoint admits through a local limiter at the room's rate", b, a)
	}
	return fmt.Sprintf("fail mode %s → %s: while Redis is unreachable the protected endpoint admits nobody", b, a)
}

func powEffect(e effectEnv) string {
	b, a := e.b.Settings.PowBits, e.a.Settings.PowBits
	switch {
	case b == a:
		return ""
	case a == 0:
		return fmt.Sprintf("proof of work %d → 0 bits: joins need no proof of work", b)
	}
	return fmt.Sprintf("proof of work %d → %d bits: each new visitor's join costs about %s hashes", b, a, num(math.Pow(2, float64(a))))
}

func methodEffect(e effectEnv) string {
	b, a := e.b.Settings.Method, e.a.Settings.Method
	if b == a {
		return ""
	}
	switch a {
	case settings.MethodPassthrough:
		return fmt.Sprintf("method %s → %s: a join is admitted at once with a token; the %d waiting go at the next tick", b, a, e.waiting)
	case settings.MethodRandom:
		return fmt.Sprintf("method %s → %s: the %d waiting keep their tickets and are drawn at random, %s, among those present; each is shown the draw's size and chance per minute instead of a place", b, a, e.waiting, e.perTick(e.a.Settings.Batch))
	case settings.MethodReject:
		return fmt.Sprintf("method %s → %s: new visitors are turned away with the room's message; the %d waiting go on", b, a, e.waiting)
	}
	return fmt.Sprintf("method %s → %s: tickets are admitted in order at %s", b, a, e.perTick(e.a.Settings.Batch))
}

func activationEffect(e effectEnv) string {
	b, a := e.b.Settings.Activation, e.a.Settings.Activation
	switch {
	case b == a:
		return ""
	case a == settings.ActivationBusy:
		return fmt.Sprintf("activation %s → %s: while the room is under its threshold and nobody waits, a new visitor is admitted on the spot; the %d waiting go first", b, a, e.waiting)
	}
	return fmt.Sprintf("activation %s → %s: every new visitor queues", b, a)
}

func presenceEffect(e effectEnv) string {
	b, a := e.b.Settings, e.a.Settings
	switch {
	case b.NoPresence == a.NoPresence && b.AwayAfter == a.AwayAfter && b.DropAfter == a.DropAfter:
		return ""
	case a.NoPresence:
		return "presence off: visitors keep their places however long they are away"
	}
	return fmt.Sprintf("presence on: a visitor unseen for %s is set aside (keeps the ticket), after %s loses the place", durWords(int64(a.AwayAfter.Seconds())), durWords(int64(a.DropAfter.Seconds())))
}

func inviteEffect(e effectEnv) string {
	switch {
	case e.b.Settings.InviteOnly == e.a.Settings.InviteOnly:
		return ""
	case e.a.Settings.InviteOnly:
		return fmt.Sprintf("invite-only: a new visitor needs an invite code; the %d waiting keep their places", e.waiting)
	}
	return "open to everyone: joins need no invite code"
}

func messageEffect(e effectEnv) string {
	switch msg := e.a.Settings.Message; {
	case e.b.Settings.Message == msg:
		return ""
	case msg == "":
		return fmt.Sprintf("the message is removed for everyone waiting (%d)", e.waiting)
	default:
		return fmt.Sprintf("everyone waiting (%d) sees at once: %q", e.waiting, msg)
	}
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
