package entry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// VerifierOptions configure a Verifier. Nil means the defaults.
type VerifierOptions struct {
	// Keys, when set, are the only keys trusted, and JWKSURL is not read.
	Keys []*Key
	// Issuer, when set, must be the token's iss.
	Issuer string
	// Rooms, when set, lists the rooms (aud) accepted; empty accepts any.
	Rooms []string
	// Leeway is the clock skew allowed on nbf and exp (default 0: the
	// server's own checks use the Redis clock, to the millisecond).
	Leeway time.Duration
	// MaxAge is how long a fetched key set is used before it is fetched
	// again (default: the response's Cache-Control max-age, else 5 min).
	MaxAge time.Duration
	// MinRefresh is the least time between two fetches caused by an
	// unknown kid (default 10 s), so forged kids cannot drive fetches.
	MinRefresh time.Duration
	// HTTPClient fetches the key set (default: a client with a 5 s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Verifier checks entry tokens offline against the keys a waitroom server
// publishes. It fetches the key set when first needed, keeps it for its
// max age, and fetches again on a kid it does not know, at most once per
// MinRefresh. It starts no goroutine. Safe for concurrent use.
type Verifier struct {
	url  string
	opts VerifierOptions

	fetch sync.Mutex // held by the one fetch under way

	mu      sync.RWMutex
	keys    map[string]*Key
	fresh   time.Time // keys are used without a fetch until then
	fetched time.Time // the last fetch attempt
}

// NewVerifier returns a Verifier of the key set at jwksURL (a server's
// https://…/.well-known/jwks.json), or of opts.Keys. The caller's opts are
// not changed or kept.
func NewVerifier(jwksURL string, opts *VerifierOptions) (*Verifier, error) {
	v := &Verifier{url: jwksURL}
	if opts != nil {
		v.opts = *opts
		v.opts.Rooms = append([]string(nil), opts.Rooms...)
	}
	o := &v.opts
	if o.MinRefresh <= 0 {
		o.MinRefresh = 10 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(o.Keys) > 0 {
		v.keys = make(map[string]*Key, len(o.Keys))
		for _, k := range o.Keys {
			if err := k.check(); err != nil {
				return nil, err
			}
			v.keys[k.ID] = k
		}
		return v, nil
	}
	if !strings.HasPrefix(jwksURL, "https://") && !strings.HasPrefix(jwksURL, "http://") {
		return nil, fmt.Errorf("entry: jwks URL %q is not http(s)", jwksURL)
	}
	return v, nil
}

// Verify checks token's form, signature, issuer, room and validity window
// now, and returns its claims. It may fetch the key set (bounded by ctx).
// An error from the checks wraps ErrInvalid; one from fetching the key set
// does not.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	if err := v.load(ctx, false); err != nil {
		return Claims{}, err
	}
	c, err := Parse(token, v.key)
	if errors.Is(err, ErrUnknownKey) && v.url != "" && len(v.opts.Keys) == 0 {
		// A key published since the last fetch: fetch again (rate limited).
		if ferr := v.load(ctx, true); ferr != nil {
			return Claims{}, ferr
		}
		c, err = Parse(token, v.key)
	}
	if err != nil {
		return Claims{}, err
	}
	if err := c.Check(v.opts.Now(), v.opts.Issuer, v.opts.Rooms, v.opts.Leeway); err != nil {
		return Claims{}, err
	}
	return c, nil
}

func (v *Verifier) key(kid string) *Key {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.keys[kid]
}

// load fetches the key set when it is stale, or when unknown is true and
// the last fetch is older than MinRefresh. A failed fetch keeps the keys
// it had; it is an error only when there are none.
func (v *Verifier) load(ctx context.Context, unknown bool) error {
	if len(v.opts.Keys) > 0 {
		return nil
	}
	need := func() bool {
		v.mu.RLock()
		defer v.mu.RUnlock()
		now := v.opts.Now()
		if unknown {
			return now.Sub(v.fetched) >= v.opts.MinRefresh
		}
		return v.keys == nil || !now.Before(v.fresh)
	}
	if !need() {
		return nil
	}
	v.fetch.Lock()
	defer v.fetch.Unlock()
	if !need() { // another caller fetched meanwhile
		return nil
	}
	keys, maxAge, err := v.get(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.opts.Now()
	v.fetched = now
	if err != nil {
		if v.keys != nil {
			v.fresh = now.Add(v.opts.MinRefresh) // try again soon, keep serving
			return nil
		}
		return err
	}
	v.keys = make(map[string]*Key, len(keys))
	for _, k := range keys {
		v.keys[k.ID] = k
	}
	v.fresh = now.Add(maxAge)
	return nil
}

// get fetches and decodes the key set and how long to keep it.
func (v *Verifier) get(ctx context.Context) ([]*Key, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("entry: fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("entry: fetch jwks: %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, 0, fmt.Errorf("entry: fetch jwks: %w", err)
	}
	keys, err := ParseJWKS(data)
	if err != nil {
		return nil, 0, err
	}
	maxAge := v.opts.MaxAge
	if maxAge <= 0 {
		maxAge = cacheMaxAge(resp.Header.Get("Cache-Control"), 5*time.Minute)
	}
	return keys, maxAge, nil
}

// cacheMaxAge reads max-age from a Cache-Control value, or returns def.
func cacheMaxAge(cc string, def time.Duration) time.Duration {
	for _, d := range strings.Split(cc, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(d), "max-age="); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return def
}
