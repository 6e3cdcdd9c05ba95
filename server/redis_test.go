package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// redisCmd returns a function that runs one command on a plain connection
// and returns the reply as text (bulk strings and arrays flattened).
func redisCmd(tb testing.TB, addr string) func(args ...string) string {
	tb.Helper()
	return func(args ...string) string {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			tb.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := c.Write([]byte(b.String())); err != nil {
			tb.Fatal(err)
		}
		out, err := readReply(bufio.NewReader(c))
		if err != nil {
			tb.Fatalf("redis %v: %v", args, err)
		}
		return out
	}
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		parts := make([]string, 0, n)
		for range n {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, " "), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
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
