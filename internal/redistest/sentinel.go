package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testlane"
)

// Sentinel is a Redis master, one replica and three redis-sentinel
// processes watching them, on loopback, without persistence.
type Sentinel struct {
	Name      string   // the master name the sentinels watch
	Sentinels []string // sentinel addresses
	Master    string   // the master's address at start
	Replica   string   // the replica's address at start
	procs     map[string]*proc
}

// URL returns the -redis value for -redis-sentinel: every sentinel.
func (s *Sentinel) URL() string { return "redis://" + strings.Join(s.Sentinels, ",") }

// StartSentinel starts a master, a replica of it and three sentinels
// (quorum 2, a master is down after 1 s without answers), waits until the
// replica is in sync and every sentinel knows the master and its replica,
// and stops them all when the test ends.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	bin := lookPath(tb, "redis-server")
	sbin := lookPath(tb, "redis-sentinel")
	s := &Sentinel{Name: "waitroom", procs: map[string]*proc{}}
	tb.Cleanup(func() {
		for _, p := range s.procs {
			p.stop()
		}
	})
	s.Master = s.start(tb, bin, nil)
	s.Replica = s.start(tb, bin, []string{"--replicaof", "127.0.0.1", portOf(s.Master)})
	waitCond(tb, 20*time.Second, "replica in sync", func() bool {
		out, err := Command(s.Replica, "INFO", "replication")
		return err == nil && strings.Contains(out, "master_link_status:up")
	})
	for range 3 {
		p, addr, err := spawn(sbin, false, func(port int) []string {
			dir := tb.TempDir()
			conf := filepath.Join(dir, "sentinel.conf")
			text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\nlogfile %s\n"+
				"sentinel monitor %s 127.0.0.1 %s 2\nsentinel down-after-milliseconds %s 1000\n"+
				"sentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 1\n",
				port, dir, filepath.Join(dir, "sentinel.log"), s.Name, portOf(s.Master), s.Name, s.Name, s.Name)
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				tb.Fatal(err)
			}
			return []string{conf}
		})
		if err != nil {
			tb.Fatal(err)
		}
		s.procs[addr] = p
		s.Sentinels = append(s.Sentinels, addr)
	}
	waitCond(tb, 20*time.Second, "sentinels know the master, its replica and each other", func() bool {
		for _, a := range s.Sentinels {
			out, err := Command(a, "SENTINEL", "MASTER", s.Name)
			if err != nil || pairValue(out, "num-slaves") != "1" || pairValue(out, "num-other-sentinels") != "2" {
				return false
			}
		}
		return true
	})
	return s
}

func (s *Sentinel) start(tb testing.TB, bin string, extra []string) string {
	tb.Helper()
	p, addr, err := spawn(bin, false, func(port int) []string {
		dir := tb.TempDir()
		return append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no",
			"--maxclients", "10000", "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	})
	if err != nil {
		tb.Fatal(err)
	}
	s.procs[addr] = p
	return addr
}

// Kill sends SIGKILL to the process serving addr (the master, say) and
// waits for it to end.
func (s *Sentinel) Kill(tb testing.TB, addr string) {
	tb.Helper()
	p := s.procs[addr]
	if p == nil {
		tb.Fatalf("redistest: no process at %s", addr)
	}
	p.stop()
	delete(s.procs, addr)
}

// MasterAddr asks the sentinels for the current master's address.
func (s *Sentinel) MasterAddr() (string, error) {
	var err error
	for _, a := range s.Sentinels {
		var out string
		if out, err = Command(a, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.Name); err == nil {
			if f := strings.Fields(out); len(f) == 2 {
				return net.JoinHostPort(f[0], f[1]), nil
			}
			err = fmt.Errorf("unexpected reply %q", out)
		}
	}
	return "", err
}

// WaitFailover waits until the sentinels name another master than old and
// it answers as a master; it returns the new master's address.
func (s *Sentinel) WaitFailover(tb testing.TB, old string, within time.Duration) string {
	tb.Helper()
	var addr string
	waitCond(tb, within, "failover", func() bool {
		a, err := s.MasterAddr()
		if err != nil || a == old {
			return false
		}
		out, err := Command(a, "INFO", "replication")
		addr = a
		return err == nil && strings.Contains(out, "role:master")
	})
	return addr
}

// lookPath is where every real Redis process starts from: an
// integration test's step (skipped in the fast lane).
func lookPath(tb testing.TB, name string) string {
	tb.Helper()
	return testlane.Tool(tb, name, "apt-get install -y redis-server redis-sentinel, or make deps")
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// waitCond polls cond until it holds or within passes.
func waitCond(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // polling processes' state, not synchronising test logic
	}
}

// Command runs one command on a fresh connection to addr and returns the
// reply as text: bulk and simple strings as they are, integers in decimal,
// arrays flattened with spaces (so a map-like reply reads "key value ...").
func Command(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second) // a loaded test machine can be slow to accept
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(c))
}

// pairValue is the value after key in a flattened "key value ..." reply.
func pairValue(out, key string) string {
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == key {
			return f[i+1]
		}
	}
	return ""
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
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
		parts := make([]string, 0, max(n, 0))
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
