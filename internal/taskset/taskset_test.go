package taskset

import (
	"os"
	"runtime"
	"testing"

	"github.com/waitroom/waitroom/internal/testlane"
)

// TestMoveAndRestore moves this process to its first CPU and back.
func TestMoveAndRestore(t *testing.T) {
	testlane.Tool(t, "taskset", "apt-get install -y util-linux")
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: nothing to move between")
	}
	pid := os.Getpid()
	had, err := Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	restore, err := Move(pid, "0")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Of(pid); err != nil || got != "0" {
		t.Fatalf("after Move: %q %v, want 0", got, err)
	}
	restore()
	if got, err := Of(pid); err != nil || got != had {
		t.Fatalf("after restore: %q %v, want %q", got, err, had)
	}
	if _, err := Move(0, "0"); err == nil {
		t.Fatal("Move of pid 0 did not fail")
	}
}
