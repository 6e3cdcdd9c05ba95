// Package rediscall is the narrow seam every package calls Redis through:
// one command (Do) or one Lua script (Eval), with replies decoded to plain
// Go values. It names no client library: internal/redisconn adapts rueidis
// and go-redis to it, so a package that runs scripts (the queue, webhooks,
// reports, schedules) links neither, and metrics wraps it to time calls.
package rediscall

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"sync"
)

// Redis is the narrow seam between a package and a Redis client library.
// Replies are decoded to int64, string, []any or nil (a nil reply is not an
// error). Implementations must be safe for concurrent use.
type Redis interface {
	// Eval runs s with keys and args, using EVALSHA with an EVAL fallback.
	Eval(ctx context.Context, s *Script, keys []string, args ...string) (any, error)
	// Do runs one command.
	Do(ctx context.Context, args ...string) (any, error)
}

// Script is a Lua script run through Redis.Eval. Make one with NewScript.
type Script struct {
	Name string // the operation label of its calls
	Src  string
	Hash string // hex SHA-1 of Src
}

// NewScript is the script src, run under name. Scripts are made once, at
// package initialisation; each name is listed by ScriptNames.
func NewScript(name, src string) *Script {
	sum := sha1.Sum([]byte(src))
	names.Lock()
	names.list = append(names.list, name)
	names.Unlock()
	return &Script{Name: name, Src: src, Hash: hex.EncodeToString(sum[:])}
}

// names are the names of every script made, in the order they were made.
var names struct {
	sync.Mutex
	list []string
}

// ScriptNames returns the names of every script this program made (those
// of the packages it links), in the order they were made: the operation
// labels a Script's calls go under.
func ScriptNames() []string {
	names.Lock()
	defer names.Unlock()
	return append([]string(nil), names.list...)
}
