package redistest

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSpawnMovesOffATakenPort takes the port spawn chose (or, for a
// cluster node, its bus port) before redis-server can bind it, as another
// test's process may, and checks that spawn starts the server on another
// port instead of failing.
func TestSpawnMovesOffATakenPort(t *testing.T) {
	bin := lookPath(t, "redis-server")
	for _, cluster := range []bool{false, true} {
		t.Run(fmt.Sprintf("cluster=%v", cluster), func(t *testing.T) {
			var taken []int
			p, addr, err := spawn(bin, cluster, func(port int) []string {
				if len(taken) == 0 {
					hold := port
					if cluster {
						hold += busOffset
					}
					l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", hold))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { l.Close() })
				}
				taken = append(taken, port)
				dir := t.TempDir()
				args := []string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
					"--save", "", "--appendonly", "no", "--dir", dir,
					"--logfile", filepath.Join(dir, "redis.log")}
				if cluster {
					args = append(args, "--cluster-enabled", "yes",
						"--cluster-config-file", filepath.Join(dir, "nodes.conf"))
				}
				return args
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.stop)
			if len(taken) != 2 {
				t.Fatalf("spawn tried ports %v, want a second port after the taken one", taken)
			}
			if addr != fmt.Sprintf("127.0.0.1:%d", taken[1]) {
				t.Fatalf("addr %s, want the second port %d", addr, taken[1])
			}
			if out, err := Command(addr, "PING"); err != nil || !strings.EqualFold(out, "PONG") {
				t.Fatalf("PING %s: %q, %v", addr, out, err)
			}
		})
	}
}

// TestSpawnGivesUp checks that a process that never comes up ends in an
// error naming why, after spawnTries ports, not in a hang.
func TestSpawnGivesUp(t *testing.T) {
	bin := lookPath(t, "redis-server")
	tries := 0
	_, _, err := spawn(bin, false, func(port int) []string {
		tries++
		return []string{"--port", fmt.Sprint(port), "--no-such-option", "x"}
	})
	if err == nil || tries != spawnTries {
		t.Fatalf("err %v after %d tries, want an error after %d", err, tries, spawnTries)
	}
	if !strings.Contains(err.Error(), "exited before it answered") {
		t.Fatalf("err %v does not say the process exited", err)
	}
}

// TestSpawnIsNotFooledByAnotherServer: when another redis-server holds
// the port spawn chose, it answers PING; spawn must not take it for the
// server it started, and starts that one on another port.
func TestSpawnIsNotFooledByAnotherServer(t *testing.T) {
	bin := lookPath(t, "redis-server")
	other := StartReal(t)
	taken, _ := strconv.Atoi(portOf(other.Addr))
	picks := 0
	pickPort = func(cluster bool) (int, error) {
		if picks++; picks == 1 {
			return taken, nil
		}
		return freeNodePort(cluster)
	}
	t.Cleanup(func() { pickPort = freeNodePort })
	p, addr, err := spawn(bin, false, func(port int) []string {
		dir := t.TempDir()
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	if addr == other.Addr || picks != 2 {
		t.Fatalf("spawn gave %s after %d ports; the other server is on %s", addr, picks, other.Addr)
	}
}
