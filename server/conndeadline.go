package main

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// firstByteDeadline closes a new connection that sends nothing within d.
// With ReduceMemoryUsage, fasthttp waits for a connection's first byte
// with no deadline of its own, so silent connections (slowloris) would
// stay open for ever. fasthttp sets its own read deadline once the first
// byte is in (ReadTimeout for the request, IdleTimeout between
// keep-alive requests) and clears every deadline before it hands a
// connection to a hijack handler, so WebSocket and SSE connections do not
// inherit this one.
func firstByteDeadline(d time.Duration) func(net.Conn, fasthttp.ConnState) {
	return func(c net.Conn, st fasthttp.ConnState) {
		if st == fasthttp.StateNew {
			_ = c.SetReadDeadline(time.Now().Add(d))
		}
	}
}
