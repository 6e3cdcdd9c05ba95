package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzHTTP sends random methods, paths, headers and bodies through the
// app in-process, against the embedded Redis. Whatever comes in, the
// answer is never a 500 (a handler's panic is one, by recoverer), an error
// is always the JSON shape, and no goroutine is left behind (TestMain).
// `go test` runs the seeds; `go test -fuzz FuzzHTTP ./server/` explores.
func FuzzHTTP(f *testing.F) {
	ts := startServer(f, nil, "rueidis", withAdmin)
	_, cred := ts.signer.NewVisitor()
	for _, s := range []struct{ method, path, hdr, body string }{
		{"POST", "/api/v1/rooms/drop/join", "", ""},
		{"POST", "/api/v1/rooms/drop/join", "Content-Type: application/json", `{"a":1}`},
		{"POST", "/api/v1/rooms/drop/join", "X-Visitor: " + cred, "[1,2]"},
		{"POST", "/api/v1/rooms/Drop_/join", "", "{"},
		{"GET", "/api/v1/rooms/drop/status", "Cookie: wr_visitor=" + cred, ""},
		{"GET", "/api/v1/rooms/drop/status?visitor=a.b", "", ""},
		{"DELETE", "/api/v1/rooms/drop/queue", "X-Visitor: " + cred, ""},
		{"GET", "/api/v1/rooms/drop/ws", "Upgrade: websocket\nConnection: Upgrade\nSec-WebSocket-Version: 13\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", ""},
		{"GET", "/api/v1/rooms/drop/sse?visitor=x.y", "Accept: text/event-stream", ""},
		{"POST", "/api/v1/rooms/drop/orders", "Authorization: Bearer a.b.c.d\nX-Visitor: " + cred, "{}"},
		{"POST", "/api/v1/rooms/drop/touch", "Authorization: Bearer ", ""},
		{"POST", "/api/v1/tokens/verify", "", `{"token":"x","visitor":"y"}`},
		{"POST", "/api/v1/tokens/verify", "", `{"token":1}`},
		{"PUT", "/api/v1/admin/rooms/drop", "Authorization: Bearer " + testAdminKey, `{"batch":-1,"opensAt":"soon"}`},
		{"PUT", "/api/v1/admin/rooms/drop", "Authorization: Bearer " + testAdminKey, `{"seats":1e309}`},
		{"POST", "/api/v1/admin/visitors", "Authorization: Bearer " + testAdminKey, `{"user":""}`},
		{"GET", "/api/v1/admin/rooms/drop/stats", "Authorization: Bearer nope", ""},
		{"GET", "/metrics", "", ""},
		{"GET", "/assets/..%2f..%2fetc%2fpasswd", "", ""},
		{"OPTIONS", "/api/v1/rooms/drop/join", "Origin: https://x\nAccess-Control-Request-Method: POST", ""},
		{"PATCH", "/", "X-Forwarded-For: 1.2.3.4, nonsense", "\x00\xff"},
		{"BREW", "/readyz?%zz", "Content-Length: 5", "12"},
		{"0", "*", "", ""}, // a method fiber does not know
	} {
		f.Add(s.method, s.path, s.hdr, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, path string, hdr string, body []byte) {
		u, err := url.ParseRequestURI(path)
		if err != nil || method == "" || method == "CONNECT" {
			t.Skip()
		}
		req := &http.Request{Method: method, URL: u, Host: "example.com", Header: http.Header{},
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Body: http.NoBody}
		if len(body) > 0 {
			req.Body = io.NopCloser(strings.NewReader(string(body)))
			req.ContentLength = int64(len(body))
		}
		for _, line := range strings.Split(hdr, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k != "" {
				req.Header.Add(k, strings.TrimSpace(v))
			}
		}
		resp, err := ts.app.Test(req, 10_000)
		if err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatalf("%s %q %q: no answer: %v", method, path, hdr, err)
			}
			return // not HTTP that fasthttp could read: it answered or closed before fiber
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 500 && resp.StatusCode != 503 {
			t.Fatalf("%s %q: %d %s", method, path, resp.StatusCode, raw)
		}
		if resp.StatusCode >= 400 && method != "HEAD" {
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
				t.Fatalf("%s %q: %d with a body that is not the JSON error: %q", method, path, resp.StatusCode, raw)
			}
		}
	})
}
