package queue

import (
	"fmt"

	"github.com/waitroom/waitroom/internal/rediscall"
)

// Redis is the seam the queue calls Redis through (internal/redisconn
// adapts either client library to it).
type Redis = rediscall.Redis

// luaScript is a script of lua/ with the names of the keys its header
// gives it.
type luaScript struct {
	*rediscall.Script

	// keyNames are the names of the keys the script is given, as the
	// header of its file of lua/ names them (see loadScript and
	// luaScript.keys); none for a script given keys of no room.
	keyNames []string
	// visitorNames are, for a batch of visitors (joinBatchScript), the
	// names of each visitor's keys, which follow keyNames (batchKeys).
	visitorNames []string
}

// scriptNames are the names of the queue's scripts, in the order they were
// made (all at package initialisation).
var scriptNames []string

// ScriptNames returns the names the queue's scripts are run under.
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
