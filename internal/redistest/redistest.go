// Package redistest starts Redis servers for tests: a real redis-server on a
// free loopback port, and the embedded miniredis.
//
// A real server is an integration test's (internal/testlane): in the fast
// lane (no -tags integration) a test that starts one is skipped there; with
// the tag a missing redis-server fails it with how to install it. The
// embedded one runs in both lanes.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Server is a running Redis for one test.
type Server struct {
	Addr string
	Kind string // "real" or "mini"
	proc *proc
	mini *miniredis.Miniredis
}

// URL returns a redis:// URL for the server.
func (s *Server) URL() string { return "redis://" + s.Addr }

// PID is the process id of a real server, 0 for the embedded one.
func (s *Server) PID() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Stop stops a real server (to test outages). Not supported for miniredis
// beyond Close.
func (s *Server) Stop() {
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
	if s.mini != nil {
		s.mini.Close()
	}
}

// Kinds lists the server kinds: a real redis-server and the embedded
// miniredis. The queue, server and report tests run on "real" alone; their
// parity suites run the same steps on each kind and compare the answers
// (see docs/testing-redis.md).
var Kinds = []string{"real", "mini"}

// Start starts a server of the given kind and stops it when the test ends.
func Start(tb testing.TB, kind string) *Server {
	tb.Helper()
	switch kind {
	case "real":
		return StartReal(tb)
	case "mini":
		return StartMini(tb)
	}
	tb.Fatalf("redistest: unknown kind %q", kind)
	return nil
}

// StartMini starts an embedded miniredis on a free loopback port.
func StartMini(tb testing.TB) *Server {
	tb.Helper()
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		tb.Fatalf("redistest: miniredis: %v", err)
	}
	tb.Cleanup(m.Close)
	return &Server{Addr: m.Addr(), Kind: "mini", mini: m}
}

// StartReal starts redis-server on a free loopback port, waits until it
// answers PING and kills it when the test ends.
func StartReal(tb testing.TB) *Server {
	tb.Helper()
	bin := lookPath(tb, "redis-server")
	p, addr, err := spawn(bin, false, func(port int) []string {
		dir := tb.TempDir()
		return []string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--maxclients", "10000", "--protected-mode", "no",
			"--logfile", filepath.Join(dir, "redis.log")}
	})
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{Addr: addr, Kind: "real", proc: p}
	tb.Cleanup(s.Stop)
	return s
}

// Restart starts a stopped real server again on the same port.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if s.Kind != "real" {
		tb.Fatalf("redistest: restart needs a real server")
	}
	s.Stop()
	_, port, _ := net.SplitHostPort(s.Addr)
	dir := tb.TempDir()
	p, err := startProc("redis-server", "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no",
		"--logfile", filepath.Join(dir, "redis.log"))
	if err != nil {
		tb.Fatalf("redistest: restart: %v", err)
	}
	s.proc = p
	if err := waitUp(p, s.Addr, 10*time.Second); err != nil {
		tb.Fatalf("redistest: restart on %s: %v", s.Addr, err)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// Cluster is a Redis Cluster of three masters on loopback.
type Cluster struct {
	Addrs []string
}

// StartCluster starts three redis-server nodes in cluster mode, joins them
// with redis-cli --cluster create and waits for cluster_state:ok.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	bin := lookPath(tb, "redis-server")
	cli := lookPath(tb, "redis-cli")
	c := &Cluster{}
	for range 3 {
		p, addr, err := spawn(bin, true, func(port int) []string {
			dir := tb.TempDir()
			return []string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
				"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
				"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no",
				"--logfile", filepath.Join(dir, "redis.log")}
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(p.stop)
		c.Addrs = append(c.Addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, a := range c.Addrs {
			out, err := exec.Command(cli, "-h", "127.0.0.1", "-p", a[strings.LastIndexByte(a, ':')+1:], "cluster", "info").Output()
			if err != nil || !strings.Contains(string(out), "cluster_state:ok") {
				ok = false
			}
		}
		if ok {
			return c
		}
		if time.Now().After(deadline) {
			tb.Fatal("redistest: cluster did not reach cluster_state:ok")
		}
		time.Sleep(100 * time.Millisecond) // polling a process's state, not synchronising test logic
	}
}
