package roomsfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// roomsOf is a file declaring n rooms, each with one setting and pad
// bytes of message.
func roomsOf(n, pad int) string {
	var b strings.Builder
	b.WriteString("rooms:\n")
	for i := range n {
		fmt.Fprintf(&b, "  r%05d:\n    message: %q\n", i, strings.Repeat("x", pad))
	}
	return b.String()
}

// The file's limits are refused with the file, the line and the reason:
// MaxRooms rooms pass, one more does not, and neither does a file over
// MaxBytes.
func TestLimits(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f, err := Load(write("max.yaml", roomsOf(MaxRooms, 1)))
	if err != nil || len(f.Rooms()) != MaxRooms {
		t.Fatalf("%d rooms: %v", MaxRooms, err)
	}
	p := write("many.yaml", roomsOf(MaxRooms+1, 1))
	_, err = Load(p)
	var fe *Error
	// Room MaxRooms+1 (0-based MaxRooms) starts at line 2 + 2*MaxRooms.
	if !errors.As(err, &fe) || fe.File != p || fe.Line != 2+2*MaxRooms || fe.Field != "rooms.r10000" ||
		!strings.Contains(fe.Msg, "at most 10000 rooms") {
		t.Fatalf("too many rooms: %v", err)
	}
	// 200 rooms of about 6 KB: past 1 MiB in room 175 or so.
	big := roomsOf(200, 6000)
	p = write("big.yaml", big)
	_, err = Load(p)
	wantLine := 1 + strings.Count(big[:MaxBytes], "\n")
	if !errors.As(err, &fe) || fe.File != p || fe.Line != wantLine || !strings.Contains(fe.Msg, "larger than 1048576 bytes (1 MiB)") {
		t.Fatalf("too big: %v (want line %d)", err, wantLine)
	}
	if !strings.HasPrefix(err.Error(), fmt.Sprintf("%s:%d: ", p, wantLine)) {
		t.Fatalf("error text: %v", err)
	}
}
