package httperr

import (
	"encoding/json"
	"testing"
)

func TestBody(t *testing.T) {
	e := &Error{Status: 425, Code: "too_early", Message: `a "quoted" <msg>`, WaitMs: 1500, Field: "batch"}
	var got struct {
		Error struct {
			Code, Message, Field string
			WaitMs               int64
		}
	}
	if err := json.Unmarshal(e.Body(), &got); err != nil {
		t.Fatalf("%s: %v", e.Body(), err)
	}
	if got.Error.Code != e.Code || got.Error.Message != e.Message || got.Error.WaitMs != 1500 || got.Error.Field != "batch" {
		t.Fatalf("decoded %+v from %s", got, e.Body())
	}
	if string(New(404, "not_found", "x").Body()) != `{"error":{"code":"not_found","message":"x"}}` {
		t.Fatalf("without extras: %s", New(404, "not_found", "x").Body())
	}
}

func TestDecodeObject(t *testing.T) {
	var v struct{ A int }
	for _, bad := range []string{"", "  ", "[1]", `"s"`, "{", `{"A":"x"}`} {
		if err := DecodeObject([]byte(bad), &v); err != ErrInvalidJSON {
			t.Errorf("%q: %v, want ErrInvalidJSON", bad, err)
		}
	}
	if err := DecodeObject([]byte(` {"A":3,"other":1} `), &v); err != nil || v.A != 3 {
		t.Fatalf("valid object: %v, %+v", err, v)
	}
}

// A message or field holding a client's bytes (control characters,
// invalid UTF-8) is still one valid JSON body, read back as encoding/json
// reads such bytes.
func TestBodyOfClientBytes(t *testing.T) {
	field := "a\x01b\xff"
	e := &Error{Status: 400, Code: "invalid_field", Message: field + ": is not a room setting", Field: field}
	body := e.Body()
	if !json.Valid(body) {
		t.Fatalf("body is not JSON: %s", body)
	}
	var got struct {
		Error struct{ Message, Field string }
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if want := "a\x01b\ufffd"; got.Error.Field != want || got.Error.Message != want+": is not a room setting" {
		t.Fatalf("field %q, message %q, want %q", got.Error.Field, got.Error.Message, want)
	}
}
