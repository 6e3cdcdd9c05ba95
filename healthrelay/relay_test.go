package healthrelay

import (
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		room string
		ms   int64
		ok   bool
		good bool
	}{
		{"gw 0.123 200", "gw", 123, true, true},
		{"<190>Dec  7 09:21:48 waitroom_health: gw 0.010 503", "gw", 10, false, true},
		{"<190>waitroom_health: drop-2026 1.500 404", "drop-2026", 1500, true, true},
		// Two attempts at the app (the first failed), then the recipe's
		// post_action call to waitroom.
		{"gw 0.002, 0.040 : 0.001 502, 200 : 204", "gw", 42, true, true},
		{"gw 0.001 : 0.003 504 : 204", "gw", 1, false, true},
		{"gw - 502", "", 0, false, false},
		{" 0.1 200", "", 0, false, false},
		{"GW 0.1 200", "", 0, false, false},
		{"gw 0.1", "", 0, false, false},
		{"gw 0.1 abc", "", 0, false, false},
		{"<190>no header end", "", 0, false, false},
	} {
		room, lat, ok, good := ParseLine(tc.line)
		if room != tc.room || lat.Round(time.Millisecond).Milliseconds() != tc.ms || ok != tc.ok || good != tc.good {
			t.Errorf("%q: %q %v %v %v, want %q %d ms %v %v", tc.line, room, lat, ok, good, tc.room, tc.ms, tc.ok, tc.good)
		}
	}
}
