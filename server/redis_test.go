package main

import (
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/waitroom/waitroom/internal/redistest"
)

// redisCmd returns a function that runs one command on a plain connection
// and returns the reply as text (bulk strings and arrays flattened).
func redisCmd(tb testing.TB, addr string) func(args ...string) string {
	tb.Helper()
	return func(args ...string) string {
		out, err := redistest.Command(addr, args...)
		if err != nil {
			tb.Fatalf("redis %v: %v", args, err)
		}
		return out
	}
}

var cmdstatRE = regexp.MustCompile(`(?m)^cmdstat_(\w+):calls=(\d+)`)

// cmdCalls reads the calls of one command from INFO commandstats.
func cmdCalls(info, cmd string) int64 {
	for _, m := range cmdstatRE.FindAllStringSubmatch(info, -1) {
		if m[1] == cmd {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			return n
		}
	}
	return 0
}

func asCloseError(err error, ce *websocket.CloseError) bool { return errors.As(err, ce) }

// shutdown stops the test server now and waits for it.
func (ts *testServer) shutdown(tb testing.TB) {
	tb.Helper()
	ts.stop()
	select {
	case err := <-ts.done:
		if err != nil {
			tb.Fatalf("run: %v", err)
		}
		ts.done <- nil // for the cleanup
	case <-time.After(20 * time.Second):
		tb.Fatal("server did not stop")
	}
}
