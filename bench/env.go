package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// target is what the bench measures: one waitroom server and, when known,
// its Redis. Either started here (a fresh redis-server and server binary) or
// given with -url/-pid/-redis-addr.
type target struct {
	URL       string
	PID       int    // 0 when unknown: no CPU or RSS
	RedisAddr string // "" when unknown: no Redis INFO
	External  bool

	rdb     *redis.Client
	procs   []*exec.Cmd // started here, stopped in reverse order
	logPath string
}

// externalOpts describes an already running server.
type externalOpts struct {
	URL       string
	PID       int
	RedisAddr string
}

// buildCache builds the server binary once per process.
var buildCache struct {
	mu   sync.Mutex
	dir  string
	path string
}

// serverBinEnv names a prebuilt server binary to use instead of building
// one (e.g. to measure a release, or while the tree does not build).
const serverBinEnv = "WAITROOM_BENCH_SERVER"

// serverBinary builds ./server of the module this bench belongs to (found
// with go env GOMOD) into a temporary folder, once.
func serverBinary(ctx context.Context) (string, error) {
	buildCache.mu.Lock()
	defer buildCache.mu.Unlock()
	if buildCache.path != "" {
		return buildCache.path, nil
	}
	if bin := os.Getenv(serverBinEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%s: %w", serverBinEnv, err)
		}
		buildCache.path = bin
		return bin, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("the go command is not on PATH: it is needed to build the server")
	}
	out, err := exec.CommandContext(ctx, gobin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the waitroom module: run the bench from the repository")
	}
	dir, err := os.MkdirTemp("", "waitroom-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "waitroom")
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", bin, "./server")
	cmd.Dir = filepath.Dir(gomod)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./server: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	buildCache.dir, buildCache.path = dir, bin
	return bin, nil
}

// removeServerBinary deletes the built binary; the next serverBinary builds
// again.
func removeServerBinary() {
	buildCache.mu.Lock()
	defer buildCache.mu.Unlock()
	if buildCache.dir != "" {
		os.RemoveAll(buildCache.dir)
	}
	buildCache.dir, buildCache.path = "", ""
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before it is used; on loopback in a bench that is rare enough.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// newSecret returns 32 random hex characters.
func newSecret() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startTarget starts a fresh redis-server and the server with serverArgs,
// and waits until GET /readyz answers 200. With ext.URL set it starts
// nothing and measures that server instead (serverArgs are then ignored).
func startTarget(ctx context.Context, ext externalOpts, serverArgs []string) (*target, error) {
	if ext.URL != "" {
		t := &target{URL: strings.TrimRight(ext.URL, "/"), PID: ext.PID, RedisAddr: ext.RedisAddr, External: true}
		if t.RedisAddr != "" {
			t.rdb = redis.NewClient(&redis.Options{Addr: t.RedisAddr, PoolSize: 2})
		}
		if err := waitReady(ctx, t.URL, 10*time.Second); err != nil {
			return nil, err
		}
		return t, nil
	}
	t := &target{}
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	if err := t.startRedis(ctx); err != nil {
		return nil, err
	}
	if err := t.startServer(ctx, t.RedisAddr, newSecret(), serverArgs); err != nil {
		return nil, err
	}
	ok = true
	return t, nil
}

// startRedis starts a fresh redis-server on a free loopback port as part of
// t, without persistence, and waits until it answers PING.
// Another process may take the port before Redis binds it (the tests of
// other packages start Redis servers at the same time): it is then
// stopped and started again on another port, up to three times.
func (t *target) startRedis(ctx context.Context) error {
	var err error
	for range 3 {
		var rport int
		if rport, err = freePort(); err != nil {
			return err
		}
		if err = t.startRedisOn(ctx, rport, "--save", "", "--appendonly", "no"); err == nil {
			return nil
		}
		t.stopProcs(false)
	}
	return err
}

// startRedisOn starts redis-server on 127.0.0.1:port as part of t with the
// extra configuration args, and waits until it answers PING (an AOF being
// loaded is waited for too: PING fails while Redis loads).
func (t *target) startRedisOn(ctx context.Context, port int, args ...string) error {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return errors.New("redis-server is not on PATH: install it (apt-get install redis-server)")
	}
	t.RedisAddr = "127.0.0.1:" + strconv.Itoa(port)
	args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--daemonize", "no", "--loglevel", "warning"}, args...)
	if err := t.spawn(exec.Command(redisBin, args...), "redis"); err != nil {
		return err
	}
	if t.rdb != nil {
		_ = t.rdb.Close()
	}
	t.rdb = redis.NewClient(&redis.Options{Addr: t.RedisAddr, PoolSize: 2})
	// The server that answers must be the one started: another one on
	// the port answers PING as well.
	if err := waitOwn(ctx, 30*time.Second, t.rdb, t.procs[len(t.procs)-1].Process.Pid); err != nil {
		return fmt.Errorf("redis-server on %s did not answer PING: %w", t.RedisAddr, err)
	}
	return nil
}

// waitOwn waits until the Redis server of process pid answers PING on
// rdb, which it does once it has loaded its data (INFO answers before):
// a server that answers with another process_id is another's, on the port
// this one could not bind. A process that exited is not waited for.
func waitOwn(ctx context.Context, limit time.Duration, rdb *redis.Client, pid int) error {
	own := "process_id:" + strconv.Itoa(pid) + "\r\n"
	exited := false
	err := waitFor(ctx, limit, func() bool {
		info, err := rdb.Info(ctx, "server").Result()
		if err == nil && strings.Contains(info, own) && rdb.Ping(ctx).Err() == nil {
			return true
		}
		exited = !alive(pid)
		return exited
	})
	if err == nil && exited {
		err = errors.New("it exited")
	}
	return err
}

// startServer starts the server built from this module on a free loopback
// port as part of t, on the Redis at redisAddr with the signing secret
// (instances that share a Redis must share it), and waits until GET
// /readyz answers 200.
func (t *target) startServer(ctx context.Context, redisAddr, secret string, serverArgs []string) error {
	sport, err := freePort()
	if err != nil {
		return err
	}
	return t.startServerOn(ctx, sport, redisAddr, secret, serverArgs)
}

// startServerOn is startServer on a given port (an instance started again
// where its visitors knew it).
func (t *target) startServerOn(ctx context.Context, sport int, redisAddr, secret string, serverArgs []string) error {
	bin, err := serverBinary(ctx)
	if err != nil {
		return err
	}
	t.URL = "http://127.0.0.1:" + strconv.Itoa(sport)
	args := []string{"-addr", "127.0.0.1:" + strconv.Itoa(sport), "-redis", "redis://" + redisAddr,
		// A run that uses the admin API passes its own -admin-key, which
		// wins; the server refuses to start on a Redis without one.
		"-secret", secret, "-admin-key", newSecret(), "-log-level", "warn", "-shutdown-timeout", "5s", "-drain-window", "0s",
		// Every simulated visitor comes from 127.0.0.1, the runs read
		// /metrics without the admin key, and they make up room names.
		"-join-rate", "0", "-public-metrics", "-open-rooms"}
	args = append(args, serverArgs...)
	scmd := exec.Command(bin, args...)
	if err := t.spawn(scmd, "waitroom"); err != nil {
		return err
	}
	t.PID = scmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		// Notices a server that dies at start-up instead of waiting out
		// the readiness deadline. Wait is called once, here.
		_ = scmd.Wait()
		close(exited)
	}()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-rctx.Done():
		}
	}()
	if err := waitReady(rctx, t.URL, 30*time.Second); err != nil {
		return fmt.Errorf("server did not become ready: %w; its log: %s", err, t.logTail())
	}
	return nil
}

// spawn starts cmd with its output in a log file (see startChild).
func (t *target) spawn(cmd *exec.Cmd, name string) error {
	f, err := os.CreateTemp("", "waitroom-bench-"+name+"-*.log")
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := startChild(cmd); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("start %s: %w", name, err)
	}
	f.Close() // the child holds its own descriptor
	if name == "waitroom" {
		t.logPath = f.Name()
	} else {
		defer os.Remove(f.Name())
	}
	t.procs = append(t.procs, cmd)
	return nil
}

func (t *target) logTail() string {
	if t.logPath == "" {
		return "(none)"
	}
	b, _ := os.ReadFile(t.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Close stops what startTarget started, by PID, newest first: SIGTERM,
// then SIGKILL after a grace period.
func (t *target) Close() {
	if t.rdb != nil {
		_ = t.rdb.Close()
	}
	t.stopProcs(false)
}

// stopProcs stops t's processes by PID, newest first, and forgets them, so
// t can be started again on the same port. kill sends SIGKILL first (a
// crash); otherwise SIGTERM with a grace period, then SIGKILL.
func (t *target) stopProcs(kill bool) {
	for i := len(t.procs) - 1; i >= 0; i-- {
		pid := t.procs[i].Process.Pid
		if kill {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		stopProcess(pid, 8*time.Second)
	}
	t.procs = nil
	if t.logPath != "" {
		os.Remove(t.logPath)
		t.logPath = ""
	}
}

// stopProcess ends one process by PID and reaps it.
func stopProcess(pid int, grace time.Duration) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		_ = p.Signal(syscall.SIGKILL)
	}
	// Reap it if it is our child (Wait may already be running elsewhere;
	// then this returns an error, which is fine).
	_, _ = p.Wait()
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func waitReady(ctx context.Context, base string, limit time.Duration) error {
	hc := &http.Client{Timeout: time.Second}
	return waitFor(ctx, limit, func() bool {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/readyz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// procSample is the server process's CPU time and resident memory.
type procSample struct {
	CPU    time.Duration
	RSSKiB int64
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

func readProc(pid int) (procSample, error) {
	var s procSample
	if pid <= 0 {
		return s, errors.New("no pid")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return s, err
	}
	// Fields after the command name, which may hold spaces: state is
	// field 3, utime 14, stime 15.
	str := string(b)
	i := strings.LastIndexByte(str, ')')
	if i < 0 {
		return s, errors.New("bad /proc stat")
	}
	f := strings.Fields(str[i+1:])
	if len(f) < 13 {
		return s, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	s.CPU = time.Duration(ut+st) * time.Second / clockTicks
	st2, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return s, err
	}
	defer st2.Close()
	sc := bufio.NewScanner(st2)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fs := strings.Fields(rest)
			if len(fs) > 0 {
				s.RSSKiB, _ = strconv.ParseInt(fs[0], 10, 64)
			}
		}
	}
	return s, nil
}

// proc reads the target's process, or a zero sample when its PID is unknown.
func (t *target) proc() procSample {
	s, _ := readProc(t.PID)
	return s
}

// redisCommands returns Redis's total_commands_processed, or -1 when the
// target's Redis is unknown.
func (t *target) redisCommands(ctx context.Context) int64 {
	if t.rdb == nil {
		return -1
	}
	info, err := t.rdb.Info(ctx, "stats").Result()
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// metrics scrapes GET /metrics into a map from "name{labels}" to value;
// each name also gets its sum over labels under the bare name.
func (t *target) metrics(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", t.URL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		key := line[:sp]
		out[key] = v
		if b := strings.IndexByte(key, '{'); b > 0 {
			out[key[:b]] += v
		}
	}
	return out
}

// starts hands commands to one goroutine locked to its OS thread for the
// life of the process. Pdeathsig fires when the thread that started a child
// exits, not the process: started from any goroutine, a child could be
// killed mid-run when the Go runtime retires that thread.
var starts = make(chan func())

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked: this thread lives as long as the bench
		for f := range starts {
			f()
		}
	}()
}

// startChild starts cmd in its own process group (a terminal's ctrl-C
// reaches only the bench, which then stops its children in order), killed
// by the kernel if the bench itself dies.
func startChild(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	errc := make(chan error, 1)
	starts <- func() { errc <- cmd.Start() }
	return <-errc
}
