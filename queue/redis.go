package queue

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
)

// Redis is the narrow seam between the queue and a Redis client library.
// Replies are decoded to int64, string, []any or nil (a nil reply is not an
// error). Implementations must be safe for concurrent use.
type Redis interface {
	// Eval runs s with keys and args, using EVALSHA with an EVAL fallback.
	Eval(ctx context.Context, s *Script, keys []string, args ...string) (any, error)
	// Do runs one command.
	Do(ctx context.Context, args ...string) (any, error)
}

// Script is a Lua script run through Redis.Eval.
type Script struct {
	Name string
	Src  string
	Hash string // hex SHA-1 of Src

	// keyNames are the names of the keys the script is given, as the
	// header of its file of lua/ names them (see loadScript and
	// Script.keys); none for a script given keys of no room.
	keyNames []string
	// visitorNames are, for a batch of visitors (joinBatchScript), the
	// names of each visitor's keys, which follow keyNames (batchKeys).
	visitorNames []string
}

func newScript(name, src string) *Script {
	scriptNames = append(scriptNames, name)
	sum := sha1.Sum([]byte(src))
	return &Script{Name: name, Src: src, Hash: hex.EncodeToString(sum[:])}
}

// scriptNames are the names of every script, in the order they were made
// (all at package initialisation).
var scriptNames []string

// ScriptNames returns the names the scripts are run under: the operation
// label of a Script's calls.
func ScriptNames() []string { return append([]string(nil), scriptNames...) }

func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("queue: unexpected reply %T %v", v, v)
}

// stringAt is element i of a script's array reply when it is a string,
// else "".
func stringAt(v any, i int) string {
	arr, _ := v.([]any)
	if i < 0 || i >= len(arr) {
		return ""
	}
	s, _ := arr[i].(string)
	return s
}

func asInts(v any, n int) ([]int64, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < n {
		return nil, fmt.Errorf("queue: unexpected reply %T %v", v, v)
	}
	out := make([]int64, len(arr))
	for i, e := range arr {
		if _, isStr := e.(string); isStr {
			continue // string members are read by the caller
		}
		x, err := asInt(e)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}
