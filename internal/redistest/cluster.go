package redistest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// HACluster is a Redis Cluster of three masters, each with one replica:
// six redis-server processes on loopback without persistence. A node is
// down after 1 s without answers (cluster-node-timeout), and the cluster
// keeps serving the slots it has while one is missing
// (cluster-require-full-coverage no), so one failing master stops only its
// own rooms until its replica is promoted.
type HACluster struct {
	Addrs []string // every node, masters and replicas as started

	mu    sync.Mutex
	procs map[string]*proc // by address; a killed node is removed
}

// NodeTimeout is the HACluster's cluster-node-timeout.
const NodeTimeout = time.Second

// StartHACluster starts six cluster nodes, joins them with
// redis-cli --cluster create --cluster-replicas 1, waits until every node
// reports cluster_state:ok and every replica is in sync, and stops them all
// (by PID) when the test ends.
func StartHACluster(tb testing.TB) *HACluster {
	tb.Helper()
	bin := lookPath(tb, "redis-server")
	cli := lookPath(tb, "redis-cli")
	c := &HACluster{procs: make(map[string]*proc)}
	tb.Cleanup(c.stopAll)
	for range 6 {
		p, addr, err := spawn(bin, true, func(port int) []string {
			dir := tb.TempDir()
			return []string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
				"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
				"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout.Milliseconds())),
				"--cluster-require-full-coverage", "no",
				"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no",
				"--maxclients", "10000", "--logfile", filepath.Join(dir, "redis.log")}
		})
		if err != nil {
			tb.Fatal(err)
		}
		c.mu.Lock()
		c.procs[addr] = p
		c.mu.Unlock()
		c.Addrs = append(c.Addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(tb, 30*time.Second)
	return c
}

func (c *HACluster) stopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, p := range c.procs {
		p.stop()
		delete(c.procs, addr)
	}
}

// Live returns the addresses of the nodes not killed.
func (c *HACluster) Live() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, a := range c.Addrs {
		if c.procs[a] != nil {
			out = append(out, a)
		}
	}
	return out
}

// Node is one line of CLUSTER NODES.
type Node struct {
	ID, Addr string
	Master   bool
	MasterID string // of a replica
	Failed   bool
	Slots    [][2]int // inclusive ranges
}

// Nodes reads CLUSTER NODES from a live node.
func (c *HACluster) Nodes() ([]Node, error) {
	var lastErr error
	for _, a := range c.Live() {
		out, err := Command(a, "CLUSTER", "NODES")
		if err != nil {
			lastErr = err
			continue
		}
		var ns []Node
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			n := Node{ID: f[0], Addr: strings.SplitN(f[1], "@", 2)[0], MasterID: f[3]}
			n.Master = strings.Contains(f[2], "master")
			n.Failed = strings.Contains(f[2], "fail")
			for _, s := range f[8:] {
				if strings.HasPrefix(s, "[") {
					continue // a slot being migrated or imported
				}
				lo, hi, _ := strings.Cut(s, "-")
				a, _ := strconv.Atoi(lo)
				b := a
				if hi != "" {
					b, _ = strconv.Atoi(hi)
				}
				n.Slots = append(n.Slots, [2]int{a, b})
			}
			ns = append(ns, n)
		}
		return ns, nil
	}
	return nil, fmt.Errorf("redistest: no live node answers CLUSTER NODES: %v", lastErr)
}

// Masters returns the masters that own slots and are not failed, by
// address.
func (c *HACluster) Masters() ([]string, error) {
	ns, err := c.Nodes()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range ns {
		if n.Master && !n.Failed && len(n.Slots) > 0 {
			out = append(out, n.Addr)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Slot is the cluster slot of key (CLUSTER KEYSLOT).
func (c *HACluster) Slot(key string) (int, error) {
	for _, a := range c.Live() {
		out, err := Command(a, "CLUSTER", "KEYSLOT", key)
		if err == nil {
			return strconv.Atoi(out)
		}
	}
	return 0, fmt.Errorf("redistest: no live node for CLUSTER KEYSLOT")
}

// MasterOf returns the node that owns slot, as the cluster sees it now.
func (c *HACluster) MasterOf(slot int) (Node, error) {
	ns, err := c.Nodes()
	if err != nil {
		return Node{}, err
	}
	for _, n := range ns {
		if !n.Master || n.Failed {
			continue
		}
		for _, r := range n.Slots {
			if slot >= r[0] && slot <= r[1] {
				return n, nil
			}
		}
	}
	return Node{}, fmt.Errorf("redistest: no master owns slot %d", slot)
}

// WaitHealthy waits until every live node reports cluster_state:ok, three
// masters own all slots and every replica's link to its master is up.
func (c *HACluster) WaitHealthy(tb testing.TB, within time.Duration) {
	tb.Helper()
	waitCond(tb, within, "a healthy cluster", func() bool {
		for _, a := range c.Live() {
			out, err := Command(a, "CLUSTER", "INFO")
			if err != nil || !strings.Contains(out, "cluster_state:ok") || !strings.Contains(out, "cluster_slots_ok:16384") {
				return false
			}
			info, err := Command(a, "INFO", "replication")
			if err != nil {
				return false
			}
			if strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up") {
				return false
			}
		}
		ms, err := c.Masters()
		return err == nil && len(ms) == 3
	})
}

// KillMaster sends SIGKILL to the master at addr and waits until its
// replica has been promoted: another master owns its slots and every live
// node says cluster_state:ok. It returns the new master's address.
func (c *HACluster) KillMaster(tb testing.TB, addr string, within time.Duration) string {
	tb.Helper()
	ns, err := c.Nodes()
	if err != nil {
		tb.Fatal(err)
	}
	var slot = -1
	for _, n := range ns {
		if n.Addr == addr && n.Master && len(n.Slots) > 0 {
			slot = n.Slots[0][0]
		}
	}
	if slot < 0 {
		tb.Fatalf("redistest: %s is not a master with slots", addr)
	}
	c.Kill(tb, addr)
	return c.WaitPromotion(tb, addr, slot, within)
}

// WaitPromotion waits until a master other than old owns slot and every
// live node says cluster_state:ok; it returns that master's address.
func (c *HACluster) WaitPromotion(tb testing.TB, old string, slot int, within time.Duration) string {
	tb.Helper()
	var promoted string
	waitCond(tb, within, "the replica's promotion", func() bool {
		n, err := c.MasterOf(slot)
		if err != nil || n.Addr == old {
			return false
		}
		for _, a := range c.Live() {
			out, err := Command(a, "CLUSTER", "INFO")
			if err != nil || !strings.Contains(out, "cluster_state:ok") {
				return false
			}
		}
		promoted = n.Addr
		return true
	})
	return promoted
}

// Kill sends SIGKILL to the node at addr and waits for it to end.
func (c *HACluster) Kill(tb testing.TB, addr string) {
	tb.Helper()
	c.mu.Lock()
	p := c.procs[addr]
	delete(c.procs, addr)
	c.mu.Unlock()
	if p == nil {
		tb.Fatalf("redistest: no live node at %s", addr)
	}
	p.stop()
}

// Failover runs CLUSTER FAILOVER on the replica of the master at addr and
// waits until that replica is the master of its slots. It returns the new
// master's address.
func (c *HACluster) Failover(tb testing.TB, master string, within time.Duration) string {
	tb.Helper()
	ns, err := c.Nodes()
	if err != nil {
		tb.Fatal(err)
	}
	var id, replica string
	for _, n := range ns {
		if n.Addr == master {
			id = n.ID
		}
	}
	for _, n := range ns {
		if id != "" && n.MasterID == id && !n.Failed {
			replica = n.Addr
		}
	}
	if replica == "" {
		tb.Fatalf("redistest: no replica of %s", master)
	}
	if _, err := Command(replica, "CLUSTER", "FAILOVER"); err != nil {
		tb.Fatalf("redistest: cluster failover: %v", err)
	}
	waitCond(tb, within, "the manual failover", func() bool {
		out, err := Command(replica, "ROLE")
		return err == nil && strings.HasPrefix(out, "master")
	})
	c.WaitHealthy(tb, within)
	return replica
}

// MigrateSlot moves slot and its keys from its master to the master at to,
// as redis-cli --cluster reshard does: IMPORTING on the target, MIGRATING
// on the source, MIGRATE the keys in rounds, then SETSLOT NODE on both and
// on every other master. Clients keep working meanwhile (ASK and
// TRYAGAIN). It returns the source's address.
func (c *HACluster) MigrateSlot(tb testing.TB, slot int, to string) string {
	tb.Helper()
	src, err := c.MasterOf(slot)
	if err != nil {
		tb.Fatal(err)
	}
	ns, err := c.Nodes()
	if err != nil {
		tb.Fatal(err)
	}
	var dst Node
	for _, n := range ns {
		if n.Addr == to {
			dst = n
		}
	}
	if dst.ID == "" || dst.ID == src.ID {
		tb.Fatalf("redistest: cannot migrate slot %d from %s to %s", slot, src.Addr, to)
	}
	s := strconv.Itoa(slot)
	must := func(addr string, args ...string) string {
		tb.Helper()
		out, err := Command(addr, args...)
		if err != nil {
			tb.Fatalf("redistest: %s on %s: %v", strings.Join(args, " "), addr, err)
		}
		return out
	}
	must(dst.Addr, "CLUSTER", "SETSLOT", s, "IMPORTING", src.ID)
	must(src.Addr, "CLUSTER", "SETSLOT", s, "MIGRATING", dst.ID)
	host, port, _ := strings.Cut(dst.Addr, ":")
	for {
		keys := strings.Fields(must(src.Addr, "CLUSTER", "GETKEYSINSLOT", s, "100"))
		if len(keys) == 0 {
			break
		}
		args := append([]string{"MIGRATE", host, port, "", "0", "5000", "REPLACE", "KEYS"}, keys...)
		must(src.Addr, args...)
	}
	must(dst.Addr, "CLUSTER", "SETSLOT", s, "NODE", dst.ID)
	must(src.Addr, "CLUSTER", "SETSLOT", s, "NODE", dst.ID)
	for _, n := range ns {
		if n.Master && !n.Failed && n.ID != src.ID && n.ID != dst.ID {
			if _, err := Command(n.Addr, "CLUSTER", "SETSLOT", s, "NODE", dst.ID); err != nil {
				tb.Logf("redistest: setslot on %s: %v", n.Addr, err)
			}
		}
	}
	waitCond(tb, 30*time.Second, "every node to agree on the slot's owner", func() bool {
		for _, a := range c.Live() {
			out, err := Command(a, "CLUSTER", "NODES")
			if err != nil {
				return false
			}
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				if len(f) < 3 || !strings.Contains(f[2], "master") {
					continue
				}
				owns := false
				for _, r := range f[8:] {
					lo, hi, _ := strings.Cut(r, "-")
					a, _ := strconv.Atoi(lo)
					b := a
					if hi != "" {
						b, _ = strconv.Atoi(hi)
					}
					if !strings.HasPrefix(r, "[") && slot >= a && slot <= b {
						owns = true
					}
				}
				if owns != (f[0] == dst.ID) {
					return false
				}
			}
		}
		return true
	})
	return src.Addr
}

// KillPubSub runs CLIENT KILL TYPE pubsub on the node at addr and returns
// how many connections it closed.
func (c *HACluster) KillPubSub(addr string) (int, error) {
	out, err := Command(addr, "CLIENT", "KILL", "TYPE", "pubsub")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}
