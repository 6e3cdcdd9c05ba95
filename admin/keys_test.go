package admin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The file's key syntax: the plain form is admin; a bad role or a missing
// key is refused with its line.
func TestAdminKeysRoleSyntax(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	write(t, path, "alice: alice-key-0123456789abcdef\ndesk:\n  key: desk-key-0123456789abcdef00\n  role: operator\n")
	ks, err := LoadKeys(path)
	if err != nil || len(ks) != 2 || ks[0].Role != Admin || ks[1].Role != Operator || ks[1].Label != "desk" {
		t.Fatalf("%+v %v", ks, err)
	}
	for body, want := range map[string]string{
		"desk:\n  key: desk-key-0123456789abcdef00\n  role: boss\n": "keys.yaml:3: the role of \"desk\" must be admin, operator or read-only",
		"desk:\n  role: operator\n":                                 "keys.yaml:2: \"desk\" has no key",
		"desk: {key: desk-key-0123456789abcdef00}\n":                "keys.yaml:1: \"desk\" has no role",
		"desk: {key: short, role: operator}\n":                      "keys.yaml:1: the key of \"desk\" must be at least 16 bytes",
		"desk: {key: desk-key-0123456789abcdef00, rank: 1}\n":       "keys.yaml:1: \"rank\" of \"desk\" is not known",
	} {
		write(t, path, body)
		if _, err := LoadKeys(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %s", body, err, want)
		}
	}
}

// Match finds the key among several, and no key that is only a prefix.
func TestKeysMatch(t *testing.T) {
	ks := Keys{NewKey("a", []byte("alice-key-0123456789"), Admin), NewKey("b", []byte("bob-key-0123456789ab"), ReadOnly)}
	if k, ok := ks.Match([]byte("bob-key-0123456789ab")); !ok || k.Label != "b" || k.Role != ReadOnly {
		t.Errorf("bob: %+v %v", k, ok)
	}
	for _, bad := range []string{"", "bob-key", "bob-key-0123456789abc"} {
		if _, ok := ks.Match([]byte(bad)); ok {
			t.Errorf("%q matched", bad)
		}
	}
}

func TestRouteRole(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         Role
	}{
		{"GET", "/api/v1/admin/rooms/drop", ReadOnly},
		{"HEAD", "/api/v1/admin/Rooms/drop/", ReadOnly},
		{"PUT", "/api/v1/admin/rooms/drop", Operator},
		{"DELETE", "/api/v1/admin/rooms/drop/sessions/v1", Admin},
		{"GET", "/api/v1/admin/nowhere", Admin},
		{"GET", "/elsewhere", Admin},
	} {
		if got := RouteRole(c.method, c.path); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.path, got, c.want)
		}
	}
}
