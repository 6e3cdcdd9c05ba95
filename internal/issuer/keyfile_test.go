package issuer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReadKeyFile: a file only its owner may read is read; one that group or
// others may read or write is refused with its mode and the fix.
func TestReadKeyFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no permission bits")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true}, {0o400, true}, {0o700, true},
		{0o640, false}, {0o604, false}, {0o620, false}, {0o602, false}, {0o644, false}, {0o666, false}, {0o610, false},
	} {
		path := filepath.Join(dir, "keys-"+tc.mode.String())
		if err := os.WriteFile(path, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		data, err := ReadKeyFile(path)
		switch {
		case tc.ok && (err != nil || string(data) != "secret"):
			t.Errorf("%v: %q, %v", tc.mode, data, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("mode %04o", tc.mode)) || !strings.Contains(err.Error(), "chmod 600 "+path)):
			t.Errorf("%v: read, or the error does not say how to fix it: %v", tc.mode, err)
		}
	}
	// A link is followed: the file it names decides.
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(link); err == nil || !strings.Contains(err.Error(), "0644") {
		t.Errorf("a link to a 0644 file: %v", err)
	}
	if _, err := ReadKeyFile(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file was read")
	}
}
