package visit

import (
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
)

// maxRememberedUses bounds the tokens an instance remembers as used. Only
// signed, admitted tokens get in, so the table grows with admissions, not
// with attackers.
const maxRememberedUses = 1 << 18

// tokenUses remembers the entry tokens this instance saw used (spent in
// Redis, or let through while Redis was unreachable) until they expire, so
// that while Redis is down a used token stays refused and one accepted
// during the outage is not accepted a second time.
type tokenUses struct {
	mu sync.Mutex
	m  map[string]time.Time // token key -> its expiry
}

func newTokenUses() *tokenUses { return &tokenUses{m: make(map[string]time.Time)} }

func useKey(t visitorsig.Token) string {
	return t.Room + "\x00" + t.Visitor + "\x00" + strconv.FormatInt(t.NotBefore.UnixMilli(), 10)
}

// add remembers t as used until expires.
func (u *tokenUses) add(t visitorsig.Token, expires time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.m) >= maxRememberedUses {
		now := time.Now()
		for k, exp := range u.m {
			if !now.Before(exp) {
				delete(u.m, k)
			}
		}
		if len(u.m) >= maxRememberedUses {
			// Every entry is live: forget the one the map yields first,
			// which Redis still remembers once it is back.
			for k := range u.m {
				delete(u.m, k)
				break
			}
		}
	}
	u.m[useKey(t)] = expires
}

// used reports whether t was remembered as used and has not expired.
func (u *tokenUses) used(t visitorsig.Token) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	exp, ok := u.m[useKey(t)]
	return ok && time.Now().Before(exp)
}

// forget drops t: it was given back.
func (u *tokenUses) forget(t visitorsig.Token) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, useKey(t))
}
