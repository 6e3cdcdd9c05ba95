package visitorsig

import (
	"crypto/hmac"
	"crypto/sha256"
	"strconv"
	"sync"
	"testing"
)

// The Signer's pooled HMAC states give the signature a fresh HMAC gives,
// from many goroutines at once.
func TestSignerPooledStates(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(domain, msg string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(domain + "\x00" + msg))
		return b64.EncodeToString(m.Sum(nil)[:sigLen])
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				id := "v" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				cred := s.VisitorCredential(id)
				if want := id + "." + fresh("visitor", id); cred != want {
					t.Errorf("credential %q, want %q", cred, want)
					return
				}
				if got, err := s.ParseVisitor(cred); err != nil || got != id {
					t.Errorf("parse %q: %q %v", cred, got, err)
					return
				}
				if _, err := s.ParseVisitor(cred[:len(cred)-1] + "A"); err == nil && cred[len(cred)-1] != 'A' {
					t.Errorf("a changed signature of %q was taken", cred)
					return
				}
			}
		})
	}
	wg.Wait()
}
