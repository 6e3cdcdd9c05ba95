package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// A fleet is one process's share of a scenario's visitors, run in this
// process or in a worker child (`bench NAME-worker -config JSON`). Every
// scenario's fleets have the same life cycle: fleetKind.startAll starts
// them at once and returns when each is ready (its visitors joined and
// listening); the scenario may then step them through named phases (cost:
// "begin" and "mark" of its measured window); end stops a fleet and
// collects its report; abort stops it without one, a child by its PID.

// fleetOf is a started fleet whose report is an R.
type fleetOf[R any] interface {
	// step runs the named phase; only the names of its kind's steps.
	step(name string) error
	// end stops the visitors and returns the report.
	end() (R, error)
	// abort stops the visitors; the fleet is not used after.
	abort()
	// pid is the child's process ID, 0 for a fleet in this process.
	pid() int
}

// fleetKind is one scenario's kind of fleet, configured by a C and
// reporting an R.
type fleetKind[C, R any] struct {
	worker string // the child's subcommand, one of workers
	// start starts a fleet in this process and returns once it is ready.
	start func(context.Context, C) (localFleet[R], error)
	// steps are the phases a fleet goes through between ready and end,
	// in order.
	steps []string
}

// localFleet is a fleet in this process.
type localFleet[R any] struct {
	steps  map[string]func()
	report func() R
	stop   func()
}

func (l localFleet[R]) step(name string) error {
	fn := l.steps[name]
	if fn == nil {
		return fmt.Errorf("fleet has no step %q", name)
	}
	fn()
	return nil
}
func (l localFleet[R]) end() (R, error) { return l.report(), nil }
func (l localFleet[R]) abort()          { l.stop() }
func (l localFleet[R]) pid() int        { return 0 } // counted as this process

// startAll starts len(handles) fleets at once, fleet p with cfg(p): in
// this process when there is one, else each in a child process. Each one
// started is put in handles, where the caller ends or aborts it, also when
// another failed.
func (k fleetKind[C, R]) startAll(ctx context.Context, handles []fleetOf[R], cfg func(p int) C) error {
	procs := len(handles)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for p := range procs {
		c := cfg(p)
		wg.Go(func() {
			var h fleetOf[R]
			var err error
			if procs == 1 {
				h, err = k.start(ctx, c)
			} else {
				h, err = startWorker[R](ctx, k.worker, c)
			}
			if err == nil {
				handles[p] = h
			}
			errs[p] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// abortFleets aborts every fleet in handles that is not nil.
func abortFleets[R any](handles []fleetOf[R]) {
	for _, h := range handles {
		if h != nil {
			h.abort()
		}
	}
}

// stepFleets runs the named step on every fleet in handles, in turn.
func stepFleets[R any](handles []fleetOf[R], name string) error {
	for _, h := range handles {
		if err := h.step(name); err != nil {
			return err
		}
	}
	return nil
}

// fleetPIDs are the process IDs of the fleets in child processes.
func fleetPIDs[R any](handles []fleetOf[R]) []int {
	var pids []int
	for _, h := range handles {
		if h != nil && h.pid() > 0 {
			pids = append(pids, h.pid())
		}
	}
	return pids
}

// workerFleet is a fleet in a child process of the bench: it is given its
// configuration as JSON on the command line, says "ready" on stdout, and
// is driven by lines on stdin (each step's name, then "end"); its report
// is one JSON document on stdout.
type workerFleet[R any] struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startWorker starts `bench sub -config JSON(cfg)` and waits for its
// "ready".
func startWorker[R any](ctx context.Context, sub string, cfg any) (*workerFleet[R], error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, sub, "-config", string(js))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startChild(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", sub, err)
	}
	w := &workerFleet[R]{cmd: cmd, in: in, out: bufio.NewReaderSize(outp, 1<<20)}
	line := make(chan string, 1)
	go func() { // ends with the child's stdout, closed by abort at the latest
		s, _ := w.out.ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != "ready\n" {
			w.abort()
			return nil, fmt.Errorf("%s did not get ready: %q", sub, s)
		}
	case <-ctx.Done():
		w.abort()
		return nil, ctx.Err()
	}
	return w, nil
}

func (w *workerFleet[R]) step(name string) error {
	_, err := io.WriteString(w.in, name+"\n")
	return err
}

// end says "end", decodes the worker's report and reaps it.
func (w *workerFleet[R]) end() (R, error) {
	var rep R
	if _, err := io.WriteString(w.in, "end\n"); err != nil {
		return rep, err
	}
	err := json.NewDecoder(w.out).Decode(&rep)
	_ = w.in.Close()
	_ = w.cmd.Wait()
	return rep, err
}

func (w *workerFleet[R]) abort() {
	_ = w.in.Close()
	stopProcess(w.cmd.Process.Pid, 5*time.Second)
}

func (w *workerFleet[R]) pid() int {
	if w.cmd.Process == nil {
		return 0
	}
	return w.cmd.Process.Pid
}

// workerMain is the body of a worker child (`bench NAME -config JSON`):
// it starts its fleet from the configuration, says "ready", runs each step
// as its name is read on stdin, and once it reads "end" writes the fleet's
// report as JSON on stdout. Anything else, or stdin closing, aborts.
func (k fleetKind[C, R]) workerMain(ctx context.Context, cfgJSON string) error {
	var cfg C
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		return fmt.Errorf("%s: config: %w", k.worker, err)
	}
	f, err := k.start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	lines := make(chan string)
	go func() { // ends with stdin, which the parent closes when done
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for _, want := range append(append([]string(nil), k.steps...), "end") {
		select {
		case l, ok := <-lines:
			if !ok || l != want {
				f.abort()
				return fmt.Errorf("%s: stopped before %s", k.worker, want)
			}
		case <-ctx.Done():
			f.abort()
			return ctx.Err()
		}
		if want != "end" {
			_ = f.step(want)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(f.report())
}
