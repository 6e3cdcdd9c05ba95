package main

import (
	"bytes"
	"encoding/json"
)

func jsonValid(s string) bool { return json.Valid([]byte(s)) }

// decodeObject decodes a JSON object body into v; unknown fields are
// ignored.
func decodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return errInvalidJSON
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errInvalidJSON
	}
	return nil
}
