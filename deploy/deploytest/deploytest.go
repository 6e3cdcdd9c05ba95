// Package deploytest builds and starts the real waitroom binary for the
// tests of the deployment files (deploy/): the chart, the alert rules and
// the dashboard are checked against what the binary accepts and exports,
// not against a list kept by hand.
package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RepoRoot is the repository's root directory (the main module's, whose
// ./server Binary builds; deploy/ is a module of its own inside it), found
// from this file's path.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("deploytest: no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// Binary builds ./server once per test process (CGO off, as released) and
// returns its path. The go command's build cache makes a rebuild cheap.
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "waitroom-deploytest-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "waitroom")
		cmd := exec.Command("go", "build", "-o", buildBin, "./server")
		cmd.Dir = RepoRoot(tb)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./server: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildBin
}

// flagLine is one flag in the -h listing: two spaces, the dash, the name.
var flagLine = regexp.MustCompile(`(?m)^  -([a-z0-9][a-z0-9-]*)`)

// Flags runs the binary with -h and returns the names of the flags it
// lists, each with the WAITROOM_ variable that also sets it (all but
// -version, which only the command line gives).
func Flags(tb testing.TB, bin string) map[string]string {
	tb.Helper()
	out, err := exec.Command(bin, "-h").Output()
	if err != nil {
		tb.Fatalf("%s -h: %v", bin, err)
	}
	flags := map[string]string{}
	for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
		if m[1] == "version" {
			continue // command line only: no variable sets it
		}
		flags[m[1]] = EnvName(m[1])
	}
	if len(flags) < 10 || flags["addr"] == "" {
		tb.Fatalf("%s -h listed %d flags, no -addr among them:\n%s", bin, len(flags), out)
	}
	return flags
}

// EnvName is the variable that sets a flag: max-conns is WAITROOM_MAX_CONNS.
func EnvName(flag string) string {
	return "WAITROOM_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Server is a running waitroom process.
type Server struct {
	// Addr is where it listens (host:port), from its start-up line.
	Addr string
	cmd  *exec.Cmd
	log  *lockedBuffer
	ops  chan string // the operations listener's address, once printed
}

// Log is what the process has written to stderr so far.
func (s *Server) Log() string { return s.log.String() }

// Signal sends sig to the process (SIGHUP: reread the rooms and admin
// keys files).
func (s *Server) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// OpsAddr is where its operations listener (-ops-addr) listens (host:port),
// from its start-up lines; it fails tb when they name none within 10 s.
func (s *Server) OpsAddr(tb testing.TB) string {
	tb.Helper()
	select {
	case a := <-s.ops:
		s.ops <- a // for the next call
		return a
	case <-time.After(10 * time.Second):
		tb.Fatalf("no operations listener in the start-up lines:\n%s", s.Log())
		return ""
	}
}

var (
	listening  = regexp.MustCompile(`waitroom listening on http://([^/\s]+)/`)
	operations = regexp.MustCompile(`^operations: http://([^/\s]+)/`)
)

// Start runs bin with only env in its environment (plus PATH) and args,
// waits for its start-up line (within 30 s) and stops it with SIGTERM when
// the test ends. Pass -addr 127.0.0.1:0 so parallel runs do not collide.
func Start(tb testing.TB, bin string, env []string, args ...string) *Server {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	log := &lockedBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = log
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	addr, ops := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			log.Write([]byte(line + "\n"))
			for re, ch := range map[*regexp.Regexp]chan string{listening: addr, operations: ops} {
				if m := re.FindStringSubmatch(line); m != nil {
					select {
					case ch <- m[1]:
					default:
					}
				}
			}
		}
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); pw.Close(); close(exited) }()
	s := &Server{cmd: cmd, log: log, ops: ops}
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case s.Addr = <-addr:
		return s
	case <-exited:
		tb.Fatalf("%s exited before listening: %v\n%s", bin, waitErr, log.String())
	case <-ctx.Done():
		tb.Fatalf("%s: no listening line within 30 s\n%s", bin, log.String())
	}
	return nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
