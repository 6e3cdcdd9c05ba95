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
