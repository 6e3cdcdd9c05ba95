package wire

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzNames: the fast name checks agree with the documented patterns.
func FuzzNames(f *testing.F) {
	roomRE := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	visitorRE := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	for _, s := range []string{"drop", "a", "-a", "a-", "Drop", "x_y", strings.Repeat("a", 64), strings.Repeat("a", 65), "", "é", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidRoom(s), roomRE.MatchString(s); got != want {
			t.Fatalf("ValidRoom(%q) = %v, pattern says %v", s, got, want)
		}
		if got, want := ValidVisitor(s), visitorRE.MatchString(s); got != want {
			t.Fatalf("ValidVisitor(%q) = %v, pattern says %v", s, got, want)
		}
	})
}
