package main

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/waitroom/waitroom/internal/redistest"
)

// BenchmarkJoinRequest is one join of a new visitor through the whole
// fasthttp handler of the app (front handlers, middleware, the join),
// in process, on the embedded Redis and on a real redis-server. What it
// allocates per request is what the join path costs beside Redis.
func BenchmarkJoinRequest(b *testing.B) {
	for _, kind := range redistest.Kinds {
		b.Run(kind, func(b *testing.B) {
			var srv *redistest.Server
			if kind == "real" {
				srv = redistest.StartReal(b)
			}
			ts := startServer(b, srv, "rueidis", func(c *config) { c.JoinRate = 0 })
			h := ts.app.Server().Handler
			var req fasthttp.Request
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI("/api/v1/rooms/bench/join")
			req.Header.SetHost("127.0.0.1")
			req.Header.SetContentType("application/json")
			req.SetBodyString("{}")
			var ctx fasthttp.RequestCtx
			ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
			b.ReportAllocs()
			for b.Loop() {
				ctx.Response.Reset()
				h(&ctx)
				if ctx.Response.StatusCode() != fasthttp.StatusOK {
					b.Fatalf("join: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
		})
	}
}
