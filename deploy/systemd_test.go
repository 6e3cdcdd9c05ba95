//go:build deploy

package deploy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/deploy/deploytest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// standIn is the user and group that play the unit's user here: nobody
// and nogroup, which own nothing, as the unit's system user does.
const standIn = "65534"

// unit is a systemd unit file: its leading comment lines and its settings.
type unit struct {
	header   []string            // the comment lines before the first section, without "#"
	settings map[string][]string // "Service.User" -> each value given, in order
}

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{settings: map[string][]string{}}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#"):
			if section == "" {
				u.header = append(u.header, strings.TrimPrefix(line, "#"))
			}
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		case line != "":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: %q is no setting", path, line)
			}
			u.settings[section+"."+k] = append(u.settings[section+"."+k], v)
		}
	}
	return u
}

// one is the single value of setting key, or "" when the unit has none.
func (u unit) one(t *testing.T, key string) string {
	t.Helper()
	v := u.settings[key]
	if len(v) > 1 {
		t.Fatalf("%s given %d times", key, len(v))
	}
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// installLines are the unit header's `install` commands that put files
// under dirs, as argument lists (what follows && is another command).
func (u unit) installLines(dirs ...string) [][]string {
	var out [][]string
	for _, l := range u.header {
		cmd, _, _ := strings.Cut(strings.TrimSpace(l), "&&")
		args := strings.Fields(cmd)
		if len(args) < 3 || args[0] != "install" {
			continue
		}
		dest := args[len(args)-1]
		for _, d := range dirs {
			if dest == d || strings.HasPrefix(dest, d+"/") {
				out = append(out, args[1:])
				break
			}
		}
	}
	return out
}

// TestSystemdUnitUserReadsItsFiles: the unit's own install steps, replayed
// under a temporary root, give the unit's user exactly what it needs. Run
// as an unprivileged stand-in for that user (setpriv), the binary starts on
// the rooms and admin keys files the steps put in /etc/waitroom, and reads
// them again on SIGHUP (systemctl reload); the environment file, which
// systemd reads as root, stays out of its reach. The layout the unit made
// before (a root-owned /etc/waitroom, as ConfigurationDirectory= leaves
// it) is refused, so the run does drop its privileges.
func TestSystemdUnitUserReadsItsFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("needs root: it lays out files owned by root for another user")
		}
		t.Skip("needs root: it lays out files owned by root for another user (CI runs it)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux): %v", err)
	}
	dir := filepath.Join(deploytest.RepoRoot(t), "deploy", "systemd")
	u := readUnit(t, filepath.Join(dir, "waitroom.service"))

	// A static system user, made by the sysusers file: one a file's group
	// can name. A dynamic user is in no such group, and systemd never hands
	// a ConfigurationDirectory= to the unit's user.
	user, group := u.one(t, "Service.User"), u.one(t, "Service.Group")
	if user == "" || group != user {
		t.Fatalf("User=%q Group=%q: want the system user waitroom.sysusers makes, and its group", user, group)
	}
	if v := u.one(t, "Service.DynamicUser"); v != "" && v != "no" {
		t.Errorf("DynamicUser=%s: a dynamic user can be given no file's group", v)
	}
	if v := u.one(t, "Service.ConfigurationDirectory"); v != "" {
		t.Errorf("ConfigurationDirectory=%s: systemd leaves it root's, so the unit's user could not read it", v)
	}
	sysusers, err := os.ReadFile(filepath.Join(dir, "waitroom.sysusers"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(sysusers), "\nu "+user+" ") {
		t.Errorf("waitroom.sysusers makes no user %q:\n%s", user, sysusers)
	}
	envFile := u.one(t, "Service.EnvironmentFile")
	if envFile == "" {
		t.Fatal("no EnvironmentFile=")
	}

	// A root of our own, with the system's directories as they are.
	root, err := os.MkdirTemp("", "waitroom-unit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	for _, d := range []string{"", "etc", "usr", "usr/local", "usr/local/bin"} {
		p := filepath.Join(root, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	under := func(p string) string { return filepath.Join(root, p) }

	// The files an operator has, then the install steps as the header
	// says, the unit's user and group played by the stand-in.
	src := t.TempDir()
	bin, err := os.ReadFile(deploytest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"waitroom":        string(bin),
		"waitroom.env":    "WAITROOM_ADDR=127.0.0.1:0\nWAITROOM_ROOMS=/etc/waitroom/rooms.yaml\nWAITROOM_ADMIN_KEYS=/etc/waitroom/admin-keys.yaml\n",
		"rooms.yaml":      "rooms:\n  drop:\n    batch: 5\n",
		"admin-keys.yaml": "ops: a-test-labelled-admin-key-0001\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	steps := u.installLines("/usr/local/bin", "/etc/waitroom")
	if len(steps) < 3 {
		t.Fatalf("the unit's header has %d install steps for the binary and /etc/waitroom:\n%s", len(steps), strings.Join(u.header, "\n"))
	}
	installed := map[string]bool{}
	for _, args := range steps {
		for i, a := range args {
			switch {
			case a == user && i > 0 && (args[i-1] == "-o" || args[i-1] == "-g"):
				args[i] = standIn
			case strings.HasPrefix(a, "/"):
				installed[strings.TrimSuffix(a, "/")] = true
				args[i] = under(a)
			}
		}
		cmd := exec.Command("install", args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("install %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if !installed[envFile] && !installed[filepath.Dir(envFile)] {
		t.Fatalf("no install step puts the EnvironmentFile %s", envFile)
	}

	// systemd reads the environment file as root; the service gets its
	// variables (paths moved under our root).
	envData, err := os.ReadFile(under(envFile))
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, l := range strings.Split(strings.TrimSpace(string(envData)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		if strings.HasPrefix(v, "/etc/") {
			v = under(v)
		}
		env = append(env, k+"="+v)
	}
	asUser := []string{"--reuid=" + standIn, "--regid=" + standIn, "--clear-groups", "--"}
	exe := under("/usr/local/bin/waitroom")

	// The environment file stays root's: the service cannot read it.
	if out, err := exec.Command(setpriv, append(asUser, "cat", under(envFile))...).CombinedOutput(); err == nil {
		t.Errorf("the unit's user can read %s:\n%s", envFile, out)
	}

	s := deploytest.Start(t, setpriv, env, append(asUser, exe)...)
	room := func(name string) int {
		req, _ := http.NewRequest("GET", "http://"+s.Addr+"/api/v1/admin/rooms/"+name, nil)
		req.Header.Set("Authorization", "Bearer a-test-labelled-admin-key-0001")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := room("drop"); code != 200 {
		t.Fatalf("room drop from the rooms file, with the admin keys file's key: %d\n%s", code, s.Log())
	}
	// systemctl reload: the files are read again, as the unit's user.
	if err := os.WriteFile(under("/etc/waitroom/rooms.yaml"), []byte("rooms:\n  drop:\n    batch: 5\n  late:\n    batch: 2\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "room late after SIGHUP", func() bool { return room("late") == 200 })

	// The control: /etc/waitroom root's alone, as systemd makes a
	// ConfigurationDirectory=, is refused to the same user.
	if err := os.Chown(under("/etc/waitroom"), 0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, append(asUser, exe)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "permission denied") {
		t.Errorf("with /etc/waitroom root's alone the unit's user started or failed otherwise: %v\n%s", err, out)
	}
}
