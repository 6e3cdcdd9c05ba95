package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// writeKeyFile writes data at path with mode (chmod after writing, so the
// umask does not decide).
func writeKeyFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestKeyFileModeRefused: a -signing-keys or -service-keys file that its
// group or others may read or change stops the start with one line naming
// the flag, the mode and the fix.
func TestKeyFileModeRefused(t *testing.T) {
	k, _ := entry.GenerateKey(entry.EdDSA, "k1")
	ks, _ := entry.NewKeySet("k1", k)
	signing, _ := ks.MarshalKeyFile()
	for _, tc := range []struct {
		flag, data string
		mode       os.FileMode
	}{
		{"-signing-keys", string(signing), 0o644},
		{"-signing-keys", string(signing), 0o666},
		{"-service-keys", "shop: " + testServiceKey + "\n", 0o640},
		{"-service-keys", "shop: " + testServiceKey + "\n", 0o602},
	} {
		path := filepath.Join(t.TempDir(), "keys")
		writeKeyFile(t, path, tc.data, tc.mode)
		cfg, err := parseConfig([]string{"-addr", "127.0.0.1:0", "-secret", testSecret, tc.flag, path}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		s, err := newServer(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
		if err == nil {
			s.redis.Close()
			t.Errorf("%s of mode %04o: started", tc.flag, tc.mode)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tc.flag+" "+path) || !strings.Contains(msg, "chmod 600") || strings.Contains(msg, "\n") {
			t.Errorf("%s of mode %04o: %q", tc.flag, tc.mode, msg)
		}
	}
}

// TestServiceKeysReload: SIGHUP rereads -service-keys, so a key removed
// from the file (a leaked one) stops working without a restart; a file
// refused at reload (here: readable by others) leaves the keys in force.
func TestServiceKeysReload(t *testing.T) {
	const other = "other-service-key-0123"
	path := filepath.Join(t.TempDir(), "service-keys.yaml")
	writeKeyFile(t, path, "shop: "+testServiceKey+"\nother: "+other+"\n", 0o600)
	ts := startServer(t, nil, "rueidis", func(c *config) { c.Entry.ServiceKeysFile = path })
	v := newVisitor(t, ts.URL)
	// An empty body gets past the key check to 400 missing_field.
	accepted := func(key string) bool {
		r := consumeAs(v, key, `{}`)
		if r.Code != 400 && r.errCode() != "invalid_service_key" {
			t.Fatalf("consume with %s: %d %s", key, r.Code, r.Raw)
		}
		return r.Code == 400
	}
	if !accepted(testServiceKey) || !accepted(other) {
		t.Fatal("the file's keys are refused at start")
	}
	writeKeyFile(t, path, "other: "+other+"\n", 0o600)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the removed key refused after SIGHUP", func() bool { return !accepted(testServiceKey) })
	if !accepted(other) {
		t.Fatal("the key left in the file is refused")
	}
	// Refused files: the keys in force stay.
	for name, write := range map[string]func(){
		"readable by others": func() { writeKeyFile(t, path, "shop: "+testServiceKey+"\n", 0o644) },
		"no keys":            func() { writeKeyFile(t, path, "{}\n", 0o600) },
		"gone":               func() { os.Remove(path) },
	} {
		write()
		ts.reload(context.Background())
		if accepted(testServiceKey) || !accepted(other) {
			t.Errorf("%s: the keys in force changed", name)
		}
	}
}
