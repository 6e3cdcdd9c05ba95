package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Requests pipelined on one connection each get their answer, in order:
// with ReduceMemoryUsage, fasthttp before 1.79 dropped the answers it had
// not flushed when the next request was already read.
func TestPipelinedRequests(t *testing.T) {
	ts := startServer(t, nil, "go-redis", nil)
	addr := strings.TrimPrefix(ts.URL, "http://")
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	const n = 12
	paths := make([]string, n)
	var reqs strings.Builder
	for i := range paths {
		paths[i] = "/healthz"
		if i%3 == 2 {
			paths[i] = "/no-such-page"
		}
		conn := ""
		if i == n-1 {
			conn = "Connection: close\r\n"
		}
		reqs.WriteString("GET " + paths[i] + " HTTP/1.1\r\nHost: waitroom.test\r\n" + conn + "\r\n")
	}
	if _, err := io.WriteString(c, reqs.String()); err != nil { // one write: all pipelined
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i, p := range paths {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d of %d (%s): %v", i+1, n, p, err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("answer %d of %d (%s): body: %v", i+1, n, p, err)
		}
		want := 200
		if p != "/healthz" {
			want = 404
		}
		if resp.StatusCode != want {
			t.Fatalf("answer %d of %d (%s): %d, want %d", i+1, n, p, resp.StatusCode, want)
		}
	}
	if b, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the last answer: %q %v, want the connection closed", b, err)
	}
}
