// Package taskset moves processes between CPUs with util-linux's taskset,
// for benchmarks that give a process a core of its own.
package taskset

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Of returns the CPUs pid may run on, as a taskset list ("0,1", "0-3").
func Of(pid int) (string, error) {
	if pid <= 0 {
		return "", fmt.Errorf("taskset: no process %d", pid)
	}
	out, err := exec.Command("taskset", "-cp", strconv.Itoa(pid)).Output()
	if err != nil {
		return "", fmt.Errorf("taskset -cp %d: %w", pid, err)
	}
	_, cpus, ok := strings.Cut(strings.TrimSpace(string(out)), ": ")
	if !ok || cpus == "" {
		return "", fmt.Errorf("taskset -cp %d: unexpected output %q", pid, out)
	}
	return cpus, nil
}

// Move puts every thread of pid on cpus (a taskset list) and returns what
// puts them back on the CPUs they had. Threads started later inherit the
// CPUs of the thread that starts them.
func Move(pid int, cpus string) (restore func(), err error) {
	had, err := Of(pid)
	if err != nil {
		return nil, err
	}
	if err := set(pid, cpus); err != nil {
		return nil, err
	}
	return func() { _ = set(pid, had) }, nil
}

func set(pid int, cpus string) error {
	out, err := exec.Command("taskset", "-a", "-cp", cpus, strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset -a -cp %s %d: %w: %s", cpus, pid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Available says why taskset cannot be used here, or nil.
func Available() error {
	if _, err := exec.LookPath("taskset"); err != nil {
		return errors.New("taskset is not on PATH (util-linux)")
	}
	return nil
}
