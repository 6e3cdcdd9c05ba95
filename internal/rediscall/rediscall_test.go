package rediscall

import (
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"testing"
)

// TestNewScript: a script carries the SHA-1 EVALSHA names it by, and its
// name is listed once.
func TestNewScript(t *testing.T) {
	src := "return redis.call('TIME')"
	s := NewScript("test-time", src)
	sum := sha1.Sum([]byte(src))
	if s.Hash != hex.EncodeToString(sum[:]) || s.Name != "test-time" || s.Src != src {
		t.Fatalf("script %+v", s)
	}
	names := ScriptNames()
	if n := len(slices.DeleteFunc(names, func(n string) bool { return n != "test-time" })); n != 1 {
		t.Fatalf("test-time listed %d times", n)
	}
}
