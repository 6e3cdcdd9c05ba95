package issuer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/entry"
)

// KeysKey is a hash of every live instance's entry token keys: field
// the instance id, value "<updated ms> <active kid> <fingerprint>
// <kid>=<thumbprint>,…". An instance rewrites its line with housekeeping;
// a line a minute old is of an instance gone.
const KeysKey = "wr:entry-keys"

// keyLine is one instance's line in KeysKey.
type keyLine struct {
	at          time.Time
	active      string
	fingerprint string
	keys        map[string]string // kid -> thumbprint
}

func encodeKeyLine(at time.Time, ks *entry.KeySet) string {
	parts := make([]string, 0, len(ks.Keys()))
	for _, k := range ks.Keys() {
		parts = append(parts, k.ID+"="+k.Thumbprint())
	}
	return strconv.FormatInt(at.UnixMilli(), 10) + " " + ks.Active().ID + " " + ks.Fingerprint() + " " + strings.Join(parts, ",")
}

func decodeKeyLine(s string) (keyLine, bool) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return keyLine{}, false
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return keyLine{}, false
	}
	l := keyLine{at: time.UnixMilli(ms), active: f[1], fingerprint: f[2], keys: map[string]string{}}
	for _, p := range strings.Split(f[3], ",") {
		kid, thumb, ok := strings.Cut(p, "=")
		if !ok {
			return keyLine{}, false
		}
		l.keys[kid] = thumb
	}
	return l, true
}

// keysDiffer says why an instance holding ks and one that wrote other
// would not accept each other's tokens, or "" when they would: a kid with
// two keys, or an active key the other does not publish.
func keysDiffer(ks *entry.KeySet, other keyLine) string {
	for kid, thumb := range other.keys {
		if k := ks.Key(kid); k != nil && k.Thumbprint() != thumb {
			return fmt.Sprintf("key %q is another key there", kid)
		}
	}
	if _, ok := other.keys[ks.Active().ID]; !ok {
		return fmt.Sprintf("the active key %q here is not published there (publish it on every instance before it signs)", ks.Active().ID)
	}
	if ks.Key(other.active) == nil {
		return fmt.Sprintf("its active key %q is not published here", other.active)
	}
	return ""
}

// Store is the Redis the instances share.
type Store interface {
	Do(ctx context.Context, args ...string) (any, error)
}

// Check compares this instance's keys with those of the live instances
// sharing r, before this one (id) publishes its own: one whose tokens they
// would refuse, or whose tokens it would refuse, must not start
// (docs/entry-tokens.md, rotation). The error names both fingerprints.
// On success it publishes this instance's line.
func (i *Issuer) Check(ctx context.Context, r Store, id string) error {
	v, err := r.Do(ctx, "HGETALL", KeysKey)
	if err != nil {
		return fmt.Errorf("entry keys: %w", err)
	}
	flat, _ := v.([]any)
	now := time.Now()
	for j := 0; j+1 < len(flat); j += 2 {
		other, _ := flat[j].(string)
		raw, _ := flat[j+1].(string)
		l, ok := decodeKeyLine(raw)
		if !ok || other == id || now.Sub(l.at) > time.Minute {
			continue
		}
		if why := keysDiffer(i.keys, l); why != "" {
			return fmt.Errorf("-signing-keys differ from those of the running instance %s (fingerprint %s here, %s there): %s",
				other, i.keys.Fingerprint(), l.fingerprint, why)
		}
	}
	return i.Publish(ctx, r, id)
}

// Publish writes this instance's line and drops lines of instances gone
// for a minute. Call it every few seconds.
func (i *Issuer) Publish(ctx context.Context, r Store, id string) error {
	now := time.Now()
	if _, err := r.Do(ctx, "HSET", KeysKey, id, encodeKeyLine(now, i.keys)); err != nil {
		return err
	}
	v, err := r.Do(ctx, "HGETALL", KeysKey)
	if err != nil {
		return err
	}
	flat, _ := v.([]any)
	for j := 0; j+1 < len(flat); j += 2 {
		other, _ := flat[j].(string)
		raw, _ := flat[j+1].(string)
		if l, ok := decodeKeyLine(raw); !ok || now.Sub(l.at) > time.Minute {
			_, _ = r.Do(ctx, "HDEL", KeysKey, other)
		}
	}
	return nil
}

// Unpublish drops this instance's line at shutdown, so an instance started
// next with other keys is compared only with those still running.
func (i *Issuer) Unpublish(ctx context.Context, r Store, id string) error {
	_, err := r.Do(ctx, "HDEL", KeysKey, id)
	return err
}
