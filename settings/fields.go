package settings

import (
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/branding"
)

// Fields are a room's settings, in the order the dashboard, the audit
// trail and docs/rooms.md show them.
var Fields = []Field{
	boolField(Field{Name: "paused", Hash: "paused", Default: "false", Steer: true, NoForm: true,
		Label: "Paused", Doc: "true: nobody is admitted; the waiting keep their places and see the room paused"},
		func(r *Room) *bool { return &r.Paused }, "1", false),
	enumField(Field{Name: "method", Hash: "method", Options: []string{MethodFIFO, MethodRandom, MethodPassthrough, MethodReject}, Default: "fifo",
		Label: "Method", Doc: "fifo: tickets in order; random: each tick draws at random among those waiting and present; passthrough: admitted at join; reject: closed to new visitors, with the message"},
		func(r *Room) *string { return &r.Method }, MethodFIFO),
	enumField(Field{Name: "activation", Hash: "activation", Options: []string{ActivationAlways, ActivationBusy}, Default: "always",
		Label: "Activation", Doc: "always: every new visitor queues; busy: while the room is under its threshold (free max-active slots, or the fixed rate this second) and nobody waits, a new visitor is admitted on the spot"},
		func(r *Room) *string { return &r.Activation }, ActivationAlways),
	enumField(Field{Name: "strategy", Hash: "strategy", Options: []string{StrategyFixed, StrategyMaxActive}, Default: "fixed",
		Label: "Strategy", Doc: "fixed: a batch every tick; max-active: keep live entry tokens at or under Max active"},
		func(r *Room) *string { return &r.Strategy }, ""),
	intField(Field{Name: "batch", Hash: "batch", Max: 100000, Default: "derived from -db-pool and the other capacity flags",
		Label: "Batch per tick", Doc: "visitors admitted each tick"},
		func(r *Room) *int { return &r.Batch }, "default"),
	intField(Field{Name: "maxActive", Hash: "maxActive", Max: 10000000, Default: "0 (required with max-active)",
		Label: "Max active", Doc: "with max-active: entry tokens live at once"},
		func(r *Room) *int { return &r.MaxActive }, ""),
	boolField(Field{Name: "autopilot", Hash: "autopilot", Default: "false",
		Label: "Autopilot", Doc: "true: every second the admission rate (fixed: the batch; max-active: Max active) is set from the origin's measured p95 latency and error rate, within minRate and maxRate; false: the room keeps the last rate set"},
		func(r *Room) *bool { return &r.Autopilot }, "1", false),
	intField(Field{Name: "latencyTarget", Hash: "apLatencyMs", Max: 600000, Default: "500",
		Label: "Latency target (ms)", Doc: "with autopilot: the origin's p95 latency to stay at or under, in milliseconds"},
		func(r *Room) *int { return &r.LatencyTarget }, "the default, 500"),
	numberField(Field{Name: "maxErrorRate", Hash: "apMaxErr", Max: 1, Default: "0.01",
		Label: "Max error rate", Doc: "with autopilot: the share of origin requests that may fail (5xx, refused, timeout) before the rate is cut"},
		func(r *Room) *float64 { return &r.MaxErrorRate }, "the default, 0.01", ""),
	numberField(Field{Name: "minRate", Hash: "apMinRate", Max: 1e6, Default: "1",
		Label: "Min rate", Doc: "with autopilot: the lowest rate it sets (admissions/s; slots with max-active)"},
		func(r *Room) *float64 { return &r.MinRate }, "the default, 1", "per second"),
	numberField(Field{Name: "maxRate", Hash: "apMaxRate", Max: 1e6, Default: "1000",
		Label: "Max rate", Doc: "with autopilot: the highest rate it sets (admissions/s; slots with max-active); at least minRate"},
		func(r *Room) *float64 { return &r.MaxRate }, "the default, 1000", "per second"),
	intField(Field{Name: "seats", Hash: "seats", Max: 100000000, Default: "0 = no limit",
		Label: "Seats", Doc: "0 = no limit; sold out when all are held"},
		func(r *Room) *int { return &r.Seats }, "no limit"),
	timeField(Field{Name: "opensAt", Hash: "opensAt", Default: "empty = open now",
		Label: "Opens at", Doc: "RFC 3339, e.g. 2026-12-01T09:00:00Z; empty = open now"},
		func(r *Room) *time.Time { return &r.OpensAt }),
	secondsField(Field{Name: "tokenTtlSeconds", Hash: "ttlMs", Min: 1, Max: 86400, Default: "-token-ttl",
		Label: "Token idle lifetime (s)", Doc: "extended by each use"},
		func(r *Room) *time.Duration { return &r.TokenTTL }, nil),
	secondsField(Field{Name: "tokenMaxSeconds", Hash: "maxMs", Min: 1, Max: 604800, Default: "-token-max",
		Label: "Token max lifetime (s)", Doc: "absolute cap; at least tokenTtlSeconds"},
		func(r *Room) *time.Duration { return &r.TokenMax }, nil),
	enumField(Field{Name: "failMode", Hash: "failMode", Options: []string{FailOpen, FailClosed}, Default: "-fail-mode",
		Label: "Fail mode", Doc: "the protected endpoint while Redis is unreachable"},
		func(r *Room) *string { return &r.FailMode }, ""),
	numberField(Field{Name: "joinRate", Hash: "joinRate", Max: 1e6, Default: "-join-rate",
		Label: "Joins / s per address", Doc: "new visitors one client address may create"},
		func(r *Room) *float64 { return &r.JoinRate }, "the default", "per second"),
	intField(Field{Name: "joinBurst", Hash: "joinBurst", Max: 1000000, Default: "-join-burst, or joinRate with joinRate set",
		Label: "Join burst", Doc: "how many at once; needs joinRate"},
		func(r *Room) *int { return &r.JoinBurst }, "the default"),
	intField(Field{Name: "powBits", Hash: "powBits", Max: MaxPowBits, Default: "0 = none",
		Label: "Proof of work (bits)", Doc: "leading zero bits a new visitor's join must solve; 0 = none"},
		func(r *Room) *int { return &r.PowBits }, "no proof of work"),
	boolField(Field{Name: "presence", Hash: "presence", Default: "true",
		Label: "Presence", Doc: "true: visitors unseen for a while are set aside, then lose their place"},
		func(r *Room) *bool { return &r.NoPresence }, "off", true),
	secondsField(Field{Name: "awayAfterSeconds", Hash: "awayMs", Min: MinAwayAfter.Seconds(), Max: 3600, Default: "60",
		Label: "Away after (s)", Doc: "unseen this long: set aside (keeps the ticket)"},
		func(r *Room) *time.Duration { return &r.AwayAfter }, checkAway),
	secondsField(Field{Name: "dropAfterSeconds", Hash: "dropMs", Min: MinAwayAfter.Seconds(), Max: 86400, Default: "600",
		Label: "Drop after (s)", Doc: "unseen this long: the place is lost; at least awayAfterSeconds"},
		func(r *Room) *time.Duration { return &r.DropAfter }, checkDrop),
	textField(Field{Name: "message", Hash: "message", Default: "empty = none", Steer: true, YAMLHint: "quote it",
		Label: "Message to everyone waiting", Doc: "plain text, at most 500 characters; shown at once on every waiting page; empty removes it"},
		func(r *Room) *string { return &r.Message }, messageCheck, nil),
	boolField(Field{Name: "inviteOnly", Hash: "inviteOnly", Default: "false",
		Label: "Invite-only", Doc: "true: a new visitor needs an invite code (POST …/invites mints them)"},
		func(r *Room) *bool { return &r.InviteOnly }, "1", false),
	textField(Field{Name: "brandTitle", Hash: "brandTitle", Default: "empty = the default", YAMLHint: "quote it",
		Label: "Page title", Doc: "the waiting page's title and tab title; empty = the default"},
		func(r *Room) *string { return &r.BrandTitle }, branding.CheckTitle, nil),
	textField(Field{Name: "brandLogo", Hash: "brandLogo", Default: "empty = the built-in mark",
		Label: "Logo URL", Doc: "an http(s) URL or a /path of an image for the page's header; empty = the built-in mark"},
		func(r *Room) *string { return &r.BrandLogo }, branding.CheckImageURL, nil),
	textField(Field{Name: "brandAccent", Hash: "brandAccent", Default: "empty = the default", YAMLHint: `quote it: "#c2185b"`,
		Label: "Accent colour", Doc: "#rgb or #rrggbb for buttons and links; empty = the default"},
		func(r *Room) *string { return &r.BrandAccent }, branding.CheckColor, nil),
	textField(Field{Name: "brandBackground", Hash: "brandBackground", Default: "empty = the default", YAMLHint: `quote it: "#fff8e1"`,
		Label: "Background", Doc: "#rgb or #rrggbb, or an http(s) URL or /path of an image; empty = the default"},
		func(r *Room) *string { return &r.BrandBackground }, branding.CheckBackground, nil),
	textField(Field{Name: "brandFooter", Hash: "brandFooter", Default: "empty = none", YAMLHint: "quote it",
		Label: "Footer (HTML)", Doc: "a, b, strong, em, i, p, br, span only (href http, https or mailto); anything else is removed when saved"},
		func(r *Room) *string { return &r.BrandFooter }, branding.CheckFooter, branding.Footer),
}

func messageCheck(msg string) string {
	if err := CheckMessage(msg); err != nil {
		return err.Error()
	}
	return ""
}

func checkAway(r Room) string {
	if d := r.AwayAfter; d != 0 && (d < MinAwayAfter || d > time.Hour) {
		return "must be 0 (the default, 60) or between " + strconv.Itoa(int(MinAwayAfter.Seconds())) + " (3 × the longest nextPollMs) and 3600"
	}
	return ""
}

func checkDrop(r Room) string {
	if d := r.DropAfter; d != 0 && (d < r.EffectiveAwayAfter() || d > 24*time.Hour) {
		return "must be 0 (the default, 600) or between awayAfterSeconds and 86400"
	}
	return ""
}

var byName = func() map[string]int {
	m := make(map[string]int, len(Fields))
	for i, f := range Fields {
		m[f.Name] = i
	}
	return m
}()

// Lookup returns the setting named name (its admin API name); like the
// API's JSON, a name in other letter case matches too.
func Lookup(name string) (Field, bool) {
	if i, ok := byName[name]; ok {
		return Fields[i], true
	}
	for _, f := range Fields {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return Field{}, false
}

// Names are the settings' names, in the order of Fields.
func Names() []string {
	out := make([]string, len(Fields))
	for i, f := range Fields {
		out[i] = f.Name
	}
	return out
}
