package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// proc is one started process. done is closed once it has ended and been
// reaped, so stopping it never races a second Wait.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startProc(bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop kills the process (by its PID) and waits until it has ended.
func (p *proc) stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// spawnTries is how many ports spawn tries before it gives up.
const spawnTries = 5

// busOffset is how far above its port a cluster node listens for its
// cluster bus.
const busOffset = 10000

// spawn starts bin on a free loopback port, with the arguments args gives
// for that port, and waits until the port answers PING. A free port is
// only free when it is chosen: another process may bind it before bin
// does, and bin then exits. So when bin exits, or does not answer within
// 10 s, spawn stops it and tries again on another port. cluster asks for
// a port whose cluster bus port is free as well.
func spawn(bin string, cluster bool, args func(port int) []string) (*proc, string, error) {
	var errs []error
	for range spawnTries {
		port, err := pickPort(cluster)
		if err != nil {
			return nil, "", err
		}
		a := args(port)
		p, err := startProc(bin, a...)
		if err != nil {
			return nil, "", fmt.Errorf("redistest: start %s: %w", bin, err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if err = waitUp(p, addr, 10*time.Second); err == nil {
			return p, addr, nil
		}
		p.stop()
		errs = append(errs, fmt.Errorf("%s: %w%s", addr, err, logTail(a)))
	}
	return nil, "", fmt.Errorf("redistest: %s did not start on %d ports: %w", bin, spawnTries, errors.Join(errs...))
}

// pickPort is freeNodePort; a test makes it give a taken port.
var pickPort = freeNodePort

// freeNodePort returns a loopback port nothing listens on. For a cluster
// node the port's bus port must exist and be free too.
func freeNodePort(cluster bool) (int, error) {
	for range 100 {
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		if !cluster {
			return port, nil
		}
		if port+busOffset > 65535 {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+busOffset))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port with a free cluster bus port")
}

// waitUp waits until p answers PING on addr, or p exits, or within
// passes. Another test's server that took the port answers PING too: the
// server that answers must say it is p (INFO's process_id).
func waitUp(p *proc, addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := ping(addr)
		if err == nil {
			err = isProc(p, addr)
			if err == nil {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before it answered (%v)", p.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // polling for process start-up, not synchronising test logic
	}
}

// isProc checks that the server answering on addr is p.
func isProc(p *proc, addr string) error {
	info, err := Command(addr, "INFO", "server")
	if err != nil {
		return err
	}
	want := fmt.Sprintf("process_id:%d", p.cmd.Process.Pid)
	for _, line := range strings.Split(info, "\n") {
		if strings.TrimSpace(line) == want {
			return nil
		}
	}
	return fmt.Errorf("another process answers on %s", addr)
}

// logTail returns the last lines of the log file named in args
// (--logfile F, or logfile F in a config file), to say why a process did
// not come up.
func logTail(args []string) string {
	var path string
	for i, a := range args {
		if a == "--logfile" && i+1 < len(args) {
			path = args[i+1]
		}
	}
	if path == "" && len(args) > 0 && strings.HasSuffix(args[0], ".conf") {
		if b, err := os.ReadFile(args[0]); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "logfile" {
					path = f[1]
				}
			}
		}
	}
	b, err := os.ReadFile(path)
	if path == "" || err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return "; log: " + strings.Join(lines, " | ")
}
