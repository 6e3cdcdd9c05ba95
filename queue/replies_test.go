package queue

import (
	"strings"
	"testing"
)

// TestDecodeMalformed checks that a reply of the wrong shape is an error
// naming the script, never a panic or a half-read value.
func TestDecodeMalformed(t *testing.T) {
	decoders := map[string]func(v any) error{
		"reveal":      func(v any) error { _, err := decodeReveal(v); return err },
		"lottery":     func(v any) error { _, err := decodeLottery(v); return err },
		"tickrooms":   func(v any) error { _, err := decodeTickRooms(v, 2); return err },
		"lottery log": func(v any) error { _, err := decodeLogRows(v); return err },
	}
	cases := []struct {
		script string
		reply  any
	}{
		{"reveal", "seed"},
		{"reveal", []any{"s", "c", "0", "0", "0", ""}},                       // no ids
		{"reveal", []any{"s", "c", "0", "0", "0", "", "id"}},                 // ids not a list
		{"reveal", []any{"s", "c", int64(1), "0", "0", "", []any{}}},         // a number for a string
		{"reveal", []any{"s", "c", "0", "0", "0", "", []any{"a", int64(2)}}}, // an id not a string
		{"lottery", nil},
		{"lottery", []any{"s", "c", "0"}},
		{"lottery", []any{"s", []any{}, "0", "0"}},
		{"tickrooms", []any{[]any{}, ""}},                               // flags missing
		{"tickrooms", []any{[]any{}, "", int64(1), int64(0), int64(1)}}, // one flag too many
		{"tickrooms", []any{"room", "", int64(1), int64(0)}},            // sample not a list
		{"tickrooms", []any{[]any{}, int64(3), int64(1), int64(0)}},     // marker not a string
		{"tickrooms", []any{[]any{}, "", "1", int64(0)}},                // a flag not a number
		{"lottery log", "1-0"},
		{"lottery log", []any{"1-0"}},
		{"lottery log", []any{[]any{"1-0"}}},
		{"lottery log", []any{[]any{int64(1), []any{"e", "add"}}}},
		{"lottery log", []any{[]any{"1-0", "e"}}},
		{"lottery log", []any{[]any{"1-0", []any{"e", int64(1)}}}},
	}
	for _, c := range cases {
		err := decoders[c.script](c.reply)
		if err == nil {
			t.Errorf("%s: %#v: no error", c.script, c.reply)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.script+": ") {
			t.Errorf("%s: %#v: error %q does not name the script", c.script, c.reply, err)
		}
	}
}

func TestDecodeReveal(t *testing.T) {
	r, err := decodeReveal([]any{"s", "c", "1000", "0", "x", "", []any{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Seed != "s" || r.Commitment != "c" || r.CommittedAt.UnixMilli() != 1000 || !r.OpenedAt.IsZero() ||
		r.Count != 0 || r.IDs == nil || len(r.IDs) != 0 {
		t.Errorf("got %+v", r)
	}
}

func TestDecodeTickRooms(t *testing.T) {
	r, err := decodeTickRooms([]any{[]any{"a", "bad room!", "b"}, "m", int64(1), int64(0)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Sample, ",") != "a,b" || r.Alive != "m" || !r.In[0] || r.In[1] {
		t.Errorf("got %+v", r)
	}
}

func TestDecodeLogRows(t *testing.T) {
	rows, err := decodeLogRows(nil)
	if err != nil || len(rows) != 0 {
		t.Fatalf("nil reply: %v %v", rows, err)
	}
	rows, err = decodeLogRows([]any{[]any{"3-0", []any{"e", "add", "tickets", "1,2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != "3-0" || len(rows[0].Fields) != 4 || rows[0].size() != 3+2+4+8+4 {
		t.Errorf("got %+v", rows)
	}
}
