package issuer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/entry"
)

// KeysKey is a hash of the entry token keys of every live instance that
// signs: field the instance id, value "<updated ms> <active kid>
// <fingerprint> <kid>=<thumbprint>,… <since ms>", since being when the
// instance joined (Redis time). An instance rewrites its line with
// housekeeping, so a line Redis lost is back within one round; a line a
// minute old is of an instance gone. A line without since is of an older
// release, which joined first.
const KeysKey = "wr:entry-keys"

// keyLine is one instance's line in KeysKey.
type keyLine struct {
	at          time.Time
	active      string
	fingerprint string
	keys        map[string]string // kid -> thumbprint
	since       time.Time         // zero: an older release's line
}

func encodeKeyLine(at, since time.Time, ks *entry.KeySet) string {
	parts := make([]string, 0, len(ks.Keys()))
	for _, k := range ks.Keys() {
		parts = append(parts, k.ID+"="+k.Thumbprint())
	}
	return strconv.FormatInt(at.UnixMilli(), 10) + " " + ks.Active().ID + " " + ks.Fingerprint() + " " + strings.Join(parts, ",") +
		" " + strconv.FormatInt(since.UnixMilli(), 10)
}

func decodeKeyLine(s string) (keyLine, bool) {
	f := strings.Fields(s)
	if len(f) != 4 && len(f) != 5 {
		return keyLine{}, false
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return keyLine{}, false
	}
	l := keyLine{at: time.UnixMilli(ms), active: f[1], fingerprint: f[2], keys: map[string]string{}}
	if len(f) == 5 {
		since, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			return keyLine{}, false
		}
		l.since = time.UnixMilli(since)
	}
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
// On success this instance joins, at Redis's time, and publishes its line.
func (i *Issuer) Check(ctx context.Context, r Store, id string) error {
	v, err := r.Do(ctx, "HGETALL", KeysKey)
	if err != nil {
		return fmt.Errorf("entry keys: %w", err)
	}
	flat, _ := v.([]any)
	now := time.Now()
	since, err := redisTime(ctx, r)
	if err != nil {
		return fmt.Errorf("entry keys: %w", err)
	}
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
	i.since.Store(since.UnixMilli())
	return i.Publish(ctx, r, id)
}

// Publish checks this instance's keys against the lines of the live
// instances that joined before it, drops lines of instances gone for a
// minute, and writes this instance's line (back, when Redis lost it). Call
// it every few seconds.
//
// The start check cannot see an instance whose line Redis had just lost:
// the two then both sign, each with keys the other refuses, until the
// older one's next round writes its line back. From then on the newer
// instance stops signing for good (Signing fails, SignToken returns no
// token, its line is withdrawn) and says so in the log, at error level;
// a restart with the agreed keys brings it back. The instance that joined
// first keeps signing: the one that cannot be right is the one that came
// last. The refusal does not lift by itself: were it to lift when the
// older instance is gone, a restart of that instance (gone for a moment,
// back as the newer one) would hand the signing to the keys it refused.
func (i *Issuer) Publish(ctx context.Context, r Store, id string) error {
	if i.refused.Load() != nil {
		// Not published: an instance starting now is compared with those
		// that sign.
		_, err := r.Do(ctx, "HDEL", KeysKey, id)
		return err
	}
	v, err := r.Do(ctx, "HGETALL", KeysKey)
	if err != nil {
		return err
	}
	now := time.Now()
	since := time.UnixMilli(i.since.Load())
	conflict := ""
	flat, _ := v.([]any)
	for j := 0; j+1 < len(flat); j += 2 {
		other, _ := flat[j].(string)
		raw, _ := flat[j+1].(string)
		l, ok := decodeKeyLine(raw)
		if !ok || now.Sub(l.at) > time.Minute {
			_, _ = r.Do(ctx, "HDEL", KeysKey, other)
			continue
		}
		joinedFirst := l.since.Before(since) || (l.since.Equal(since) && other < id)
		if other == id || !joinedFirst || conflict != "" {
			continue
		}
		if why := keysDiffer(i.keys, l); why != "" {
			conflict = fmt.Sprintf("-signing-keys differ from those of instance %s, running since before this one (fingerprint %s here, %s there): %s",
				other, i.keys.Fingerprint(), l.fingerprint, why)
		}
	}
	if conflict != "" {
		i.refused.Store(&conflict)
		i.log.Error("entry tokens: this instance stops signing and is not ready: its keys differ from those of an instance that joined before it; "+
			"restart it with the same -signing-keys as the others (docs/entry-tokens.md#rotation)", "err", conflict, "fingerprint", i.keys.Fingerprint())
		_, err := r.Do(ctx, "HDEL", KeysKey, id)
		return err
	}
	_, err = r.Do(ctx, "HSET", KeysKey, id, encodeKeyLine(now, since, i.keys))
	return err
}

// Signing is nil while this instance signs entry tokens, else why it
// stopped: its keys differ from those of an instance that joined before it
// (Publish). The server is not ready from then on.
func (i *Issuer) Signing() error {
	if why := i.refused.Load(); why != nil {
		return errors.New(*why)
	}
	return nil
}

// redisTime is r's clock.
func redisTime(ctx context.Context, r Store) (time.Time, error) {
	v, err := r.Do(ctx, "TIME")
	if err != nil {
		return time.Time{}, err
	}
	arr, _ := v.([]any)
	if len(arr) != 2 {
		return time.Time{}, fmt.Errorf("TIME: unexpected reply %v", v)
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(arr[0]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(arr[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, fmt.Errorf("TIME: unexpected reply %v", v)
	}
	return time.Unix(sec, usec*1000), nil
}

// Unpublish drops this instance's line at shutdown, so an instance started
// next with other keys is compared only with those still running.
func (i *Issuer) Unpublish(ctx context.Context, r Store, id string) error {
	_, err := r.Do(ctx, "HDEL", KeysKey, id)
	return err
}
