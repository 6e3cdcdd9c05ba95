package push

import (
	"strconv"
	"time"
)

// hello is the first message of every push connection, before the first
// state: the longest the server stays silent on it (a state or a heartbeat
// comes at least that often, so a client may take twice that of silence as
// a lost connection, whatever an idle proxy or a sleeping laptop did to it)
// and the server's clock (a page of another origin cannot read the Date
// header of a stream, and its own clock may be off).
//
//	{"type":"hello","heartbeatMs":41100,"serverTime":"2026-11-30T12:00:00.123Z"}
func hello(silence time.Duration, now time.Time) []byte {
	b := make([]byte, 0, 96)
	b = append(b, `{"type":"hello","heartbeatMs":`...)
	b = strconv.AppendInt(b, silence.Milliseconds(), 10)
	b = append(b, `,"serverTime":"`...)
	b = now.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}
