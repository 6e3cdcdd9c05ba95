package wire

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

func TestStateJSON(t *testing.T) {
	opens := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		s    State
		want string
	}{
		{"waiting", State{Room: "drop", Status: StatusWaiting, Position: 3, ETASeconds: 1, NextPoll: 500 * time.Millisecond},
			`{"type":"state","room":"drop","status":"waiting","position":3,"etaSeconds":1,"nextPollMs":500,"paused":false}`},
		{"waiting with rate", State{Room: "drop", Status: StatusWaiting, Position: 700, ETASeconds: 5, Rate: 140, NextPoll: 2 * time.Second},
			`{"type":"state","room":"drop","status":"waiting","position":700,"etaSeconds":5,"ratePerSecond":140,"nextPollMs":2000,"paused":false}`},
		{"admitted", State{Room: "drop", Status: StatusAdmitted, Token: "t", NotBefore: time.UnixMilli(1000).UTC(), ExpiresAt: time.UnixMilli(2000)},
			`{"type":"state","room":"drop","status":"admitted","paused":false,"token":"t","notBefore":"1970-01-01T00:00:01Z","expiresAt":"1970-01-01T00:00:02Z"}`},
		{"pre-queue: opensAt, no position", State{Room: "drop", Status: StatusWaiting, OpensAt: opens, NextPoll: 5 * time.Second, Paused: true},
			`{"type":"state","room":"drop","status":"waiting","opensAt":"2026-12-01T09:00:00Z","nextPollMs":5000,"paused":true}`},
		{"sold out", State{Room: "drop", Status: StatusSoldOut, NextPoll: 4 * time.Second},
			`{"type":"state","room":"drop","status":"sold_out","nextPollMs":4000,"paused":false}`},
		{"not in queue", State{Room: "a-b", Status: StatusNotInQueue},
			`{"type":"state","room":"a-b","status":"not_in_queue","paused":false}`},
		{"degraded waiting", State{Room: "drop", Status: StatusWaiting, Position: 3, ETASeconds: 1, NextPoll: 500 * time.Millisecond, Degraded: true},
			`{"type":"state","room":"drop","status":"waiting","position":3,"etaSeconds":1,"nextPollMs":500,"paused":false,"degraded":true}`},
		{"in a lottery: the draw's size and chance, no position", State{Room: "drop", Status: StatusWaiting, InDraw: 1200, ChancePerMinute: 0.35, NextPoll: 5 * time.Second, Message: "hi"},
			`{"type":"state","room":"drop","status":"waiting","inDraw":1200,"chancePerMinute":0.35,"nextPollMs":5000,"paused":false,"message":"hi"}`},
		{"waiting with a range", State{Room: "drop", Status: StatusWaiting, Position: 700, ETASeconds: 300, ETARange: Range{Low: 240, High: 360}, Rate: 2.333, NextPoll: 5 * time.Second},
			`{"type":"state","room":"drop","status":"waiting","position":700,"etaSeconds":300,"etaRange":{"low":240,"high":360},"ratePerSecond":2.333,"nextPollMs":5000,"paused":false}`},
		{"a range of one number is sent", State{Room: "drop", Status: StatusWaiting, Position: 7, ETASeconds: 1, ETARange: Range{Low: 1, High: 1}},
			`{"type":"state","room":"drop","status":"waiting","position":7,"etaSeconds":1,"etaRange":{"low":1,"high":1},"paused":false}`},
		{"in a lottery with quartiles", State{Room: "drop", Status: StatusWaiting, InDraw: 50, ChancePerMinute: 1, ETARange: Range{Low: 3, High: 14}, NextPoll: time.Second},
			`{"type":"state","room":"drop","status":"waiting","inDraw":50,"chancePerMinute":1,"etaRange":{"low":3,"high":14},"nextPollMs":1000,"paused":false}`},
		{"no range where there is no wait", State{Room: "drop", Status: StatusSoldOut, ETARange: Range{Low: 1, High: 2}},
			`{"type":"state","room":"drop","status":"sold_out","paused":false}`},
		{"no range in the pre-queue", State{Room: "drop", Status: StatusWaiting, OpensAt: opens, ETARange: Range{Low: 1, High: 2}},
			`{"type":"state","room":"drop","status":"waiting","opensAt":"2026-12-01T09:00:00Z","paused":false}`},
		{"degraded pre-queue", State{Room: "drop", Status: StatusWaiting, OpensAt: opens, Degraded: true},
			`{"type":"state","room":"drop","status":"waiting","opensAt":"2026-12-01T09:00:00Z","paused":false,"degraded":true}`},
		{"waiting in a busy room that queues, with a message, degraded", State{Room: "drop", Status: StatusWaiting, Position: 3, ETASeconds: 1, Message: "hi", Degraded: true,
			Activation: Activation{Queueing: true, Since: time.UnixMilli(1500)}},
			`{"type":"state","room":"drop","status":"waiting","position":3,"etaSeconds":1,"paused":false,"message":"hi","activation":{"state":"queueing","since":"1970-01-01T00:00:01.5Z"},"degraded":true}`},
		{"admitted in a busy room that lets visitors through", State{Room: "drop", Status: StatusAdmitted, Token: "t", NotBefore: time.UnixMilli(1000).UTC(), ExpiresAt: time.UnixMilli(2000),
			Activation: Activation{Since: opens}},
			`{"type":"state","room":"drop","status":"admitted","paused":false,"token":"t","notBefore":"1970-01-01T00:00:01Z","expiresAt":"1970-01-01T00:00:02Z","activation":{"state":"passing","since":"2026-12-01T09:00:00Z"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(c.s.AppendJSON(nil))
			if got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatal("not JSON")
			}
		})
	}
}

// TestAppendWaitingIsAppendJSON: the fast position encoder and the full one
// write the same bytes, so a pushed position is the state a poll gets.
func TestAppendWaitingIsAppendJSON(t *testing.T) {
	for _, s := range []State{
		{Room: "drop", Status: StatusWaiting, Position: 1, ETASeconds: 0},
		{Room: "x", Status: StatusWaiting, Position: 40000, ETASeconds: 286, NextPoll: 4567 * time.Millisecond, Paused: true},
		{Room: "lecture-42", Status: StatusWaiting, Position: 15, ETASeconds: 1, NextPoll: 512 * time.Millisecond},
		{Room: "drop", Status: StatusWaiting, Position: 9001, ETASeconds: 2572, Rate: 3.5, NextPoll: 5 * time.Second},
		{Room: "drop", Status: StatusWaiting, Position: 2, ETASeconds: 3, Rate: 0.667},
		{Room: "drop", Status: StatusWaiting, Position: 900, ETASeconds: 300, ETARange: Range{Low: 250, High: 420}, Rate: 3, NextPoll: 5 * time.Second},
	} {
		fast := AppendWaiting(WaitingPrefix(s.Room), s.Position, s.ETASeconds, s.ETARange, s.Rate, s.NextPoll, s.Paused)
		if full := s.AppendJSON(nil); string(fast) != string(full) {
			t.Fatalf("fast %s\nfull %s", fast, full)
		}
	}
}

// TestShown: a page's figure between updates moves on at the rate, rounds
// up, stops at 1, and stands without a rate.
func TestShown(t *testing.T) {
	for _, c := range []struct {
		pos     int64
		rate    float64
		elapsed time.Duration
		want    int64
	}{
		{7000, 140, 0, 7000},
		{7000, 140, time.Second, 6860},
		{7000, 140, 1500 * time.Millisecond, 6790},
		{100, 140, 500 * time.Millisecond, 30},
		{100, 140, time.Second, 1},
		{100, 140, time.Hour, 1},
		{10, 3, 1100 * time.Millisecond, 7}, // 10 - 3.3, rounded up
		{10, 0, time.Minute, 10},
		{1, 140, time.Second, 1},
		{500, 140, -time.Second, 500},
	} {
		if got := Shown(c.pos, c.rate, c.elapsed); got != c.want {
			t.Errorf("Shown(%d, %v, %v) = %d, want %d", c.pos, c.rate, c.elapsed, got, c.want)
		}
	}
	for _, c := range []struct{ in, want float64 }{{140, 140}, {14 / 0.1, 140}, {2.0 / 3, 0.667}, {0, 0}, {-1, 0}} {
		if got := RoundRate(c.in); got != c.want {
			t.Errorf("RoundRate(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestChannel(t *testing.T) {
	for _, room := range []string{"drop", "a", "lecture-42"} {
		if got := RoomOf(Channel(room)); got != room {
			t.Fatalf("RoomOf(Channel(%q)) = %q", room, got)
		}
	}
	for _, ch := range []string{"", "wr:{}:events", "wr:{drop}:other", "x:{drop}:events", "wr:{drop"} {
		if got := RoomOf(ch); got != "" {
			t.Fatalf("RoomOf(%q) = %q, want none", ch, got)
		}
	}
}

func TestDecodeEvent(t *testing.T) {
	e, err := DecodeEvent([]byte(`{"type":"admit","room":"drop","tick":17329876544,"count":2,"admitted":[["a",1732987654400,1732987954400],["b",1.7329876545e+12,"1732987954500"]]}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != EventAdmit || e.Room != "drop" || e.Tick != 17329876544 || e.Count != 2 || len(e.Admitted) != 2 {
		t.Fatalf("%+v", e)
	}
	if a := e.Admitted[1]; a.Visitor != "b" || a.NotBefore.UnixMilli() != 1732987654500 || a.ExpiresAt.UnixMilli() != 1732987954500 {
		t.Fatalf("%+v", a)
	}
	open, err := DecodeEvent([]byte(`{"type":"open","count":3}`))
	if err != nil || open.Type != EventOpen || open.Count != 3 {
		t.Fatalf("%+v %v", open, err)
	}
	for _, bad := range []string{
		`not json`,
		`{"type":"admit","count":-1}`,
		`{"type":"admit","count":1e40}`,
		`{"type":"admit","admitted":[["a",1]]}`,
		`{"type":"admit","admitted":[["a",0,5]]}`,
		`{"type":"admit","admitted":[[1,2,3]]}`,
		`{"type":"admit","admitted":[["a",1,2],["b",0,5]]}`,
		`{"type":"admit","admitted":[["a",1,2],["b",-1,5]]}`,
		`{"type":"admit","admitted":{"a":1}}`,
	} {
		if _, err := DecodeEvent([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"type":"admit","room":"drop","tick":1,"count":1,"admitted":[["a",1732987654400,1732987954400]]}`))
	f.Add([]byte(`{"type":"config","room":"drop","reason":"seats_released"}`))
	f.Add([]byte(`{"type":"open","count":"NaN"}`))
	f.Add([]byte(`{"type":"admit","admitted":[["a",1,2],["b\u00e9",3,4],["c",05,6]]}`))
	f.Add([]byte(`{"type":"admit","admitted":[ ["a",1,2] ]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEvent(b)
		if err != nil {
			return
		}
		// The fast reading of the admitted list agrees with the general
		// decoder wherever it takes the list.
		var raw struct {
			Admitted json.RawMessage `json:"admitted"`
		}
		if json.Unmarshal(b, &raw) == nil {
			if fast, ok := scanAdmitted(raw.Admitted); ok {
				var slow []admitEntry
				if err := json.Unmarshal(raw.Admitted, &slow); err != nil || len(slow) != len(fast) {
					t.Fatalf("fast %v, general %v (%v)", fast, slow, err)
				}
				for i := range slow {
					if Admission(slow[i]) != fast[i] {
						t.Fatalf("entry %d: fast %+v, general %+v", i, fast[i], slow[i])
					}
				}
			}
		}
		if e.Count < 0 || e.Count > maxCount {
			t.Fatalf("count %d accepted", e.Count)
		}
		for _, a := range e.Admitted {
			if a.NotBefore.UnixMilli() <= 0 || a.ExpiresAt.UnixMilli() <= 0 {
				t.Fatalf("entry %+v accepted", a)
			}
		}
	})
}

// TestAppendDrawIsAppendJSON: a pushed lottery state is the state a poll
// gets.
func TestAppendDrawIsAppendJSON(t *testing.T) {
	for _, s := range []State{
		{Room: "drop", Status: StatusWaiting, InDraw: 1, ChancePerMinute: 1},
		{Room: "x", Status: StatusWaiting, InDraw: 100000, ChancePerMinute: DrawChance(100000, 140), NextPoll: 4567 * time.Millisecond, Paused: true},
		{Room: "x", Status: StatusWaiting, InDraw: 40, ChancePerMinute: 1, ETARange: Range{Low: 2, High: 9}, NextPoll: time.Second},
	} {
		fast := AppendDraw(WaitingPrefix(s.Room), s.InDraw, s.ChancePerMinute, s.ETARange, s.NextPoll, s.Paused)
		if full := s.AppendJSON(nil); string(fast) != string(full) {
			t.Fatalf("fast %s\nfull %s", fast, full)
		}
	}
}

func TestDrawChance(t *testing.T) {
	for _, c := range []struct {
		size int64
		rate float64
		want float64
	}{
		{100000, 140, 0.084}, // 8,400 a minute out of 100,000
		{3000, 140, 1},       // everyone goes within the minute
		{7, 0, 0},
		{0, 140, 0},
		{30000, 1.0 / 3, 0.0007},
	} {
		if got := DrawChance(c.size, c.rate); got != c.want {
			t.Errorf("DrawChance(%d, %v) = %v, want %v", c.size, c.rate, got, c.want)
		}
	}
}

// TestScanAdmitted: the scripts' admitted lists are read by the fast path,
// with the general decoder's result; other spellings fall back to it.
func TestScanAdmitted(t *testing.T) {
	e, err := DecodeEvent([]byte(`{"type":"admit","count":3,"admitted":[["v1.drop~1",1732987654400,1732987954400],["b",1,2],["c-3",1732987654401,1732987954401]]}`))
	if err != nil || len(e.Admitted) != 3 {
		t.Fatalf("%+v %v", e, err)
	}
	if a := e.Admitted[0]; a.Visitor != "v1.drop~1" || a.NotBefore.UnixMilli() != 1732987654400 || a.ExpiresAt.UnixMilli() != 1732987954400 {
		t.Fatalf("%+v", a)
	}
	for _, in := range []string{`[["a",1,2]]`, `[]`, `[["a",1,2],["b",3,4]]`} {
		if _, ok := scanAdmitted([]byte(in)); !ok {
			t.Errorf("%s: not read by the fast path", in)
		}
	}
	for _, in := range []string{`[ ["a",1,2]]`, `[["a\n",1,2]]`, `[["a",1.5,2]]`, `[["a",1e3,2]]`, `[["a","1",2]]`, `[["a",01,2]]`,
		`[["a",1,2,3]]`, `[["a",1,2]`, `[["a",1,2]]x`, `[["é",1,2]]`, `[["a",1234567890123456789,2]]`, `null`} {
		if _, ok := scanAdmitted([]byte(in)); ok {
			t.Errorf("%s: read by the fast path", in)
		}
	}
	// Spellings the fast path leaves alone still decode.
	e, err = DecodeEvent([]byte(`{"type":"admit","admitted":[ ["a\u0062", 1.7329876545e+12, "1732987954500"] ]}`))
	if err != nil || len(e.Admitted) != 1 || e.Admitted[0].Visitor != "ab" || e.Admitted[0].NotBefore.UnixMilli() != 1732987654500 {
		t.Fatalf("%+v %v", e, err)
	}
}

func BenchmarkDecodeEvent(b *testing.B) {
	var p []byte
	p = append(p, `{"type":"admit","room":"drop","tick":17329876544,"count":14,"admitted":[`...)
	for i := range 14 {
		if i > 0 {
			p = append(p, ',')
		}
		p = append(p, `["v1.drop~`...)
		p = strconv.AppendInt(p, int64(i), 10)
		p = append(p, `.abcdefghijklmnop",1732987654400,1732987954400]`...)
	}
	p = append(p, `]}`...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEvent(p); err != nil {
			b.Fatal(err)
		}
	}
}

// AppendString is encoding/json's encoding of every string, the strings
// it appends as they are among them.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "shop", "v1.abc-DEF_09.xyz", `a"b`, `a\b`, "tab\there", "nl\n", "\x00", "\x7f",
		"<script>", "a&b", "é", "日本", "\xff\xfe", "\u2028", "end\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	})
}

// BenchmarkAppendString compares AppendString with strconv.AppendQuote,
// which the join's reply used before, on a visitor's credential.
func BenchmarkAppendString(b *testing.B) {
	const cred = "v1.Zk3kQ9sAbCdEfGhIjKlMnOpQrStUvWx.12345.0.7f3a9c1b2d4e6f8091a2b3c4d5e6f708"
	buf := make([]byte, 0, 256)
	b.Run("AppendString", func(b *testing.B) {
		for b.Loop() {
			buf = AppendString(buf[:0], cred)
		}
	})
	b.Run("strconv.AppendQuote", func(b *testing.B) {
		for b.Loop() {
			buf = strconv.AppendQuote(buf[:0], cred)
		}
	})
}
