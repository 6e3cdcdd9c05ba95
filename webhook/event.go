package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The event types, each the "type" of the payload it sends.
const (
	RoomCreated     = "room.created"
	RoomOpened      = "room.opened"   // opensAt passed, or a pre-queue opened
	RoomPaused      = "room.paused"   // admission paused
	RoomResumed     = "room.resumed"  // admission resumed
	RoomSoldOut     = "room.sold_out" // the last seat went
	RoomQueueing    = "room.queueing" // a room with activation busy began to queue
	RoomPassing     = "room.passing"  // … and to let visitors straight through again
	EventStarted    = "event.started" // a scheduled event began
	EventEnded      = "event.ended"
	ReportReady     = "report.ready"     // an event's report can be read
	SettingsChanged = "settings.changed" // with the audit entry
	// OriginOverloaded and OriginRecovered: a room's autopilot cut its
	// rate on the origin's errors or latency, and the origin is healthy
	// again.
	OriginOverloaded = "origin.overloaded"
	OriginRecovered  = "origin.recovered"
)

// Events lists every event type, in the order the docs give them.
var Events = []string{RoomCreated, RoomOpened, RoomPaused, RoomResumed, RoomSoldOut, RoomQueueing, RoomPassing, EventStarted, EventEnded, ReportReady, SettingsChanged, OriginOverloaded, OriginRecovered}

// KnownEvent reports whether t is one of Events.
func KnownEvent(t string) bool { return slices.Contains(Events, t) }

// Endpoint is one receiver: where events go, the secret they are signed
// with, and which events it wants (none listed: all of them).
type Endpoint struct {
	URL    string   `json:"url" yaml:"url"`
	Secret string   `json:"secret" yaml:"secret"`
	Events []string `json:"events" yaml:"events"`
}

// Wants reports whether e subscribes to event type t.
func (e Endpoint) Wants(t string) bool { return len(e.Events) == 0 || slices.Contains(e.Events, t) }

// Masked is e with its secret cut to its first characters, as an API
// shows it back.
func (e Endpoint) Masked() Endpoint {
	e.Secret = MaskSecret(e.Secret)
	e.Events = append([]string{}, e.Events...)
	return e
}

// MaskSecret keeps the prefix and four characters of a secret.
func MaskSecret(s string) string {
	const keep = len(secretPrefix) + 4
	if len(s) <= keep {
		return strings.Repeat("*", len(s))
	}
	return s[:keep] + "…"
}

// RedactURL is raw cut to its scheme, host and port, for where roles
// that may not see secrets read it (the audit trail): a receiver's path
// and query often carry a token of their own (…/services/T0/B0/XXXX,
// ?token=…), so both become "…". A URL that does not parse is all "…".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "…"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawPath != "" || u.RawQuery != "" || u.ForceQuery || u.Opaque != "" {
		out += "/…"
	} else {
		out += "/"
	}
	return out
}

// An InvalidError says what is wrong with an endpoint: Code is the stable
// error code an API answers (invalid_webhook_url, unknown_event,
// invalid_webhook_secret, too_many_webhooks, webhook_target_not_allowed).
type InvalidError struct {
	Code string
	Msg  string
}

func (e *InvalidError) Error() string { return e.Msg }

const (
	secretPrefix = "whsec_"
	// MinSecretBytes and MaxSecretBytes bound a secret's key, as the
	// specification recommends.
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// Validate checks e: an absolute http or https URL with a host, known
// event names, and a secret of "whsec_" and the base64 of 24 to 64 bytes.
func (e Endpoint) Validate() error {
	if err := ValidURL(e.URL); err != nil {
		return err
	}
	for _, t := range e.Events {
		if !KnownEvent(t) {
			return &InvalidError{"unknown_event", fmt.Sprintf("unknown event %q: one of %s", t, strings.Join(Events, ", "))}
		}
	}
	if _, err := secretKey(e.Secret); err != nil {
		return err
	}
	return nil
}

// ValidURL checks that raw is an absolute http or https URL with a host
// and no user information.
func ValidURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
		return &InvalidError{"invalid_webhook_url", fmt.Sprintf("webhook url %q: want an absolute http:// or https:// URL with a host, no user or fragment", raw)}
	}
	return nil
}

// secretKey is the HMAC key of a "whsec_" secret.
func secretKey(s string) ([]byte, error) {
	bad := &InvalidError{"invalid_webhook_secret", fmt.Sprintf("webhook secret: want %q and the base64 of %d to %d random bytes", secretPrefix, MinSecretBytes, MaxSecretBytes)}
	b64, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return nil, bad
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, bad
	}
	return key, nil
}

// NewSecret is a fresh secret of 32 random bytes.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return secretPrefix + base64.StdEncoding.EncodeToString(b[:])
}
