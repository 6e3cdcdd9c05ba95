package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The cluster variant of the scale scenario (scale -cluster): a Redis
// Cluster of three masters with a replica each, started here, three
// instances with -redis-cluster, and the push visitors spread over rooms
// whose slots are spread evenly over the masters. It reports what each
// node carried while the rooms admitted: CPU, and the PUBLISH and SPUBLISH
// commands it ran (INFO commandstats), with the shard channels subscribed
// on it, to show that a master carries only its own rooms' pub/sub.

// clusterNodeUsage is one node over the admitting phase.
type clusterNodeUsage struct {
	Addr          string   `json:"addr"`
	Role          string   `json:"role"`
	Rooms         []string `json:"rooms"`         // rooms whose slot it owns (masters)
	ShardChannels []string `json:"shardChannels"` // PUBSUB SHARDCHANNELS at the end of the phase
	Cores         float64  `json:"cpuCores"`
	Publish       int64    `json:"publishCalls"`
	SPublish      int64    `json:"spublishCalls"`
	Commands      int64    `json:"commands"`
}

type clusterRoomResult struct {
	Room     string `json:"room"`
	Master   string `json:"master"`
	Visitors int    `json:"visitors"`
	Told     int    `json:"told"`
	Twice    int    `json:"toldMoreThanOnce"`
}

type scaleClusterReport struct {
	Scenario      string              `json:"scenario"`
	Machine       string              `json:"machine"`
	Command       string              `json:"command"`
	Visitors      int                 `json:"visitors"`
	Instances     int                 `json:"instances"`
	Batch         int                 `json:"batch"`
	TickMs        int64               `json:"tickMs"`
	AdmitSeconds  float64             `json:"admitSeconds"`
	Nodes         []clusterNodeUsage  `json:"nodes"`
	Rooms         []clusterRoomResult `json:"rooms"`
	InstanceCores []float64           `json:"instanceCpuCores"`
	OnlyOwnRooms  bool                `json:"eachMasterOnlyItsOwnRooms"`
}

// clusterEnv is the six nodes and the instances, all started here.
type clusterEnv struct {
	nodes []*target // one per redis-server; rdb talks to it alone
	dirs  []string  // the nodes' working directories
	scaleEnv
}

func (e *clusterEnv) close() {
	for _, t := range e.insts {
		t.Close()
	}
	for _, n := range e.nodes {
		n.Close()
	}
	for _, d := range e.dirs {
		os.RemoveAll(d)
	}
}

// startClusterNode starts one cluster node of redis-server bin on a free
// loopback port whose bus port (port+10000) is free too, in a folder of
// its own, which it returns to be removed. Another process may take
// either port before the node binds it (the tests of other packages
// start Redis servers at the same time), and the node then exits, or
// another server answers there: the node is stopped and started again on
// other ports, up to three times.
func startClusterNode(ctx context.Context, bin string) (*target, string, error) {
	dir, err := os.MkdirTemp("", "waitroom-bench-cluster-")
	if err != nil {
		return nil, "", err
	}
	var last error
	for range 3 {
		port, err := freeClusterPort()
		if err != nil {
			return nil, dir, err
		}
		os.Remove(dir + "/nodes.conf")
		n := &target{RedisAddr: "127.0.0.1:" + strconv.Itoa(port)}
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", dir+"/nodes.conf", "--dir", dir,
			"--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no", "--daemonize", "no",
			"--loglevel", "warning", "--maxclients", "20000")
		if err := n.spawn(cmd, "redis"); err != nil {
			return nil, dir, err
		}
		n.rdb = redis.NewClient(&redis.Options{Addr: n.RedisAddr, PoolSize: 2})
		err = waitOwn(ctx, 10*time.Second, n.rdb, cmd.Process.Pid)
		if err == nil {
			return n, dir, nil
		}
		last = fmt.Errorf("cluster node %s did not answer PING: %w", n.RedisAddr, err)
		n.Close()
	}
	return nil, dir, last
}

// freeClusterPort is freePort for a cluster node: a port below 55536 whose
// bus port, port+10000, is free as well.
func freeClusterPort() (int, error) {
	for range 100 {
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		if port > 55535 {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	return 0, errors.New("no free loopback port with a free cluster bus port")
}

func startClusterEnv(ctx context.Context, o scaleOptions) (*clusterEnv, error) {
	e := &clusterEnv{scaleEnv: scaleEnv{adminKey: newSecret()}}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not on PATH: install it (apt-get install redis-server)")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, errors.New("redis-cli is not on PATH: install it (apt-get install redis-tools)")
	}
	var addrs []string
	for range 6 {
		n, dir, err := startClusterNode(ctx, bin)
		if dir != "" {
			e.dirs = append(e.dirs, dir)
		}
		if err != nil {
			return nil, err
		}
		e.nodes = append(e.nodes, n)
		addrs = append(addrs, n.RedisAddr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, out)
	}
	if err := waitFor(ctx, 30*time.Second, func() bool {
		for _, n := range e.nodes {
			info, err := n.rdb.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, fmt.Errorf("cluster did not reach cluster_state:ok: %w", err)
	}
	secret := newSecret()
	seed := addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	sargs := []string{"-redis-cluster", "-tick", o.Tick.String(), "-batch", strconv.Itoa(o.Batch), "-admin-key", e.adminKey, "-ws-heartbeat", o.WSPing.String()}
	for i := range o.Instances {
		t := &target{}
		e.insts = append(e.insts, t)
		if err := t.startServer(ctx, seed, secret, sargs); err != nil {
			return nil, fmt.Errorf("instance %d: %w", i+1, err)
		}
	}
	ok = true
	return e, nil
}

var pubCallsRe = regexp.MustCompile(`cmdstat_(s?publish):calls=(\d+)`)

// nodeSample is one node's counters.
type nodeSample struct {
	cpu             float64
	cmds, pub, spub int64
	role            string
	shardChannels   []string
	ownerOf         map[string]bool // rooms whose slot it owns
}

func (e *clusterEnv) sampleNodes(ctx context.Context, rooms []string) []nodeSample {
	out := make([]nodeSample, len(e.nodes))
	for i, n := range e.nodes {
		u := readRedisUsage(ctx, n.rdb)
		s := nodeSample{cpu: u.CPU, cmds: u.Cmds, ownerOf: map[string]bool{}}
		if info, err := n.rdb.Info(ctx, "commandstats").Result(); err == nil {
			for _, m := range pubCallsRe.FindAllStringSubmatch(info, -1) {
				v, _ := strconv.ParseInt(m[2], 10, 64)
				if m[1] == "publish" {
					s.pub = v
				} else {
					s.spub = v
				}
			}
		}
		if info, err := n.rdb.Info(ctx, "replication").Result(); err == nil {
			s.role = "replica"
			if strings.Contains(info, "role:master") {
				s.role = "master"
			}
		}
		s.shardChannels, _ = n.rdb.Do(ctx, "PUBSUB", "SHARDCHANNELS").StringSlice()
		slices.Sort(s.shardChannels)
		if s.role == "master" {
			for _, r := range rooms {
				// A master answers a key of its own slot, and MOVED for
				// any other.
				if err := n.rdb.Exists(ctx, "wr:{"+r+"}:q").Err(); err == nil {
					s.ownerOf[r] = true
				}
			}
		}
		out[i] = s
	}
	return out
}

// clusterRooms picks n room names, spread evenly over the masters by slot.
func (e *clusterEnv) clusterRooms(ctx context.Context, n int) ([]string, map[string]string, error) {
	var masters []*target
	for _, t := range e.nodes {
		if info, err := t.rdb.Info(ctx, "replication").Result(); err == nil && strings.Contains(info, "role:master") {
			masters = append(masters, t)
		}
	}
	if len(masters) == 0 {
		return nil, nil, errors.New("no master")
	}
	per := map[string]int{}
	owner := map[string]string{}
	var rooms []string
	base := "cl-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	for i := 0; len(rooms) < n && i < 100*n; i++ {
		name := fmt.Sprintf("%s-%d", base, i)
		for _, m := range masters {
			if err := m.rdb.Exists(ctx, "wr:{"+name+"}:q").Err(); err != nil {
				continue
			}
			if per[m.RedisAddr] < (n+len(masters)-1)/len(masters) {
				per[m.RedisAddr]++
				owner[name] = m.RedisAddr
				rooms = append(rooms, name)
			}
		}
	}
	if len(rooms) < n {
		return nil, nil, errors.New("could not spread the rooms over the masters")
	}
	return rooms, owner, nil
}

// clusterDefaults fills in the options of scale -cluster, whose counts
// and admitting phase differ from scale's.
func (o *scaleOptions) clusterDefaults() {
	if o.Quick {
		o.N = orInt(o.N, 1200)
		o.Admit = orDur(o.Admit, 5*time.Second)
	}
	o.N = orInt(o.N, 9000)
	o.Admit = orDur(o.Admit, 20*time.Second)
	o.Idle = orDur(o.Idle, time.Second)
	o.defaults()
}

func runScaleCluster(ctx context.Context, o scaleOptions, rooms int, command string) (*scaleClusterReport, error) {
	o.clusterDefaults()
	rooms = max(rooms, 3)
	if o.N < rooms {
		return nil, fmt.Errorf("scale -cluster: want at least one visitor per room (-n %d, %d rooms)", o.N, rooms)
	}
	ctx, cancel := withLimit(ctx, 2*time.Minute+time.Duration(o.N)*10*time.Millisecond+o.Admit)
	defer cancel()
	fmt.Fprintf(o.Progress, "scale -cluster: starting 6 cluster nodes and %d instances\n", o.Instances)
	env, err := startClusterEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	defer env.close()
	names, owner, err := env.clusterRooms(ctx, rooms)
	if err != nil {
		return nil, err
	}
	for _, r := range names {
		if err := env.setPaused(ctx, r, true); err != nil {
			return nil, fmt.Errorf("pause %s: %w", r, err)
		}
	}
	fmt.Fprintf(o.Progress, "scale -cluster: connecting %d %s visitors in %d rooms\n", o.N, o.Transport, len(names))
	fleets := make([]*scaleFleet, len(names))
	defer func() {
		for _, f := range fleets {
			if f != nil {
				f.abort()
			}
		}
	}()
	if err := startClusterFleets(ctx, o, env.urls(), names, fleets); err != nil {
		return nil, fmt.Errorf("connect: %w; the first instance's log: %s", err, env.insts[0].logTail())
	}
	if err := waitFor(ctx, 30*time.Second, func() bool { return env.conns(ctx) == float64(o.N) }); err != nil {
		return nil, fmt.Errorf("the instances count %.0f connections of %d: %w", env.conns(ctx), o.N, err)
	}

	fmt.Fprintf(o.Progress, "scale -cluster: admitting for %v\n", o.Admit)
	p0 := make([]procSample, len(env.insts))
	for i, t := range env.insts {
		p0[i] = t.proc()
	}
	n0 := env.sampleNodes(ctx, names)
	t0 := time.Now()
	for _, r := range names {
		if err := env.setPaused(ctx, r, false); err != nil {
			return nil, err
		}
	}
	if err := waitPhase(ctx, t0.Add(o.Admit)); err != nil {
		return nil, err
	}
	for _, r := range names {
		if err := env.setPaused(ctx, r, true); err != nil {
			return nil, err
		}
	}
	secs := time.Since(t0).Seconds()
	n1 := env.sampleNodes(ctx, names)
	rep := &scaleClusterReport{Scenario: "scale-cluster", Machine: machine(), Command: command, Visitors: o.N, Instances: o.Instances,
		Batch: o.Batch, TickMs: o.Tick.Milliseconds(), AdmitSeconds: secs, OnlyOwnRooms: true}
	for i, t := range env.insts {
		p := t.proc()
		rep.InstanceCores = append(rep.InstanceCores, (p.CPU-p0[i].CPU).Seconds()/secs)
	}
	// Settle: deliveries of the last tick land after notBefore.
	if err := waitPhase(ctx, time.Now().Add(3*o.Tick)); err != nil {
		return nil, err
	}
	clusterNodesUsage(rep, env, names, n0, n1, secs)
	for i, r := range names {
		rep.Rooms = append(rep.Rooms, clusterRoomOf(fleets[i], r, owner[r]))
		fleets[i] = nil
	}
	return rep, writeScaleCluster(o.Out, rep)
}

// startClusterFleets starts one fleet per room into fleets, in this
// process, each on every instance in urls.
func startClusterFleets(ctx context.Context, o scaleOptions, urls, names []string, fleets []*scaleFleet) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, r := range names {
		first := i * o.N / len(names)
		cfg := scaleFleetConfig{URLs: urls, Room: r, Transport: o.Transport, First: first, Count: (i+1)*o.N/len(names) - first,
			IPBase: 2 + i*4, IPs: 4, SetupConc: 16}
		wg.Go(func() { fleets[i], errs[i] = startScaleFleet(ctx, cfg) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// clusterNodesUsage is each node's use from n0 to n1 (secs apart) in
// rep.Nodes; rep.OnlyOwnRooms is cleared when a node served a room it
// does not own.
func clusterNodesUsage(rep *scaleClusterReport, env *clusterEnv, names []string, n0, n1 []nodeSample, secs float64) {
	for i, n := range env.nodes {
		a, b := n0[i], n1[i]
		u := clusterNodeUsage{Addr: n.RedisAddr, Role: b.role, ShardChannels: b.shardChannels,
			Cores: (b.cpu - a.cpu) / secs, Publish: b.pub - a.pub, SPublish: b.spub - a.spub, Commands: b.cmds - a.cmds}
		if math.IsNaN(u.Cores) {
			u.Cores = 0
		}
		for _, r := range names {
			if b.ownerOf[r] {
				u.Rooms = append(u.Rooms, r)
			}
		}
		// Only its own rooms: no PUBLISH at all, SPUBLISH only on a master
		// that owns rooms, and only its own rooms' channels subscribed.
		if u.Publish != 0 || (u.SPublish > 0) != (len(u.Rooms) > 0) {
			rep.OnlyOwnRooms = false
		}
		for _, ch := range u.ShardChannels {
			if r := strings.TrimSuffix(strings.TrimPrefix(ch, "wr:{"), "}:events"); !b.ownerOf[r] && b.role == "master" {
				rep.OnlyOwnRooms = false
			}
		}
		rep.Nodes = append(rep.Nodes, u)
	}
}

// clusterRoomOf ends the room's fleet f and counts who was told.
func clusterRoomOf(f *scaleFleet, room, master string) clusterRoomResult {
	res := clusterRoomResult{Room: room, Master: master, Visitors: f.cfg.Count}
	fr := f.end()
	for _, v := range fr.Visitors {
		if v.Admitted > 0 {
			res.Told++
		}
		if v.Admitted > 1 {
			res.Twice++
		}
	}
	return res
}

// writeScaleCluster writes rep as scale-cluster.json and .md into out.
func writeScaleCluster(out string, rep *scaleClusterReport) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "scale-cluster.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "scale-cluster.md"), []byte(scaleClusterMarkdown(rep)), 0o644)
}

func scaleClusterMarkdown(r *scaleClusterReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# scale -cluster\n\n%d WebSocket visitors in %d rooms over %d instances on a Redis Cluster of 3 masters with a replica each (6 redis-server processes), sharded pub/sub. The rooms admit %d per %d ms tick for %.0f s. Machine: %s.\n\nCommand: `%s`\n\n",
		r.Visitors, len(r.Rooms), r.Instances, r.Batch, r.TickMs, r.AdmitSeconds, r.Machine, r.Command)
	b.WriteString("| node | role | rooms owned | CPU (cores) | SPUBLISH | PUBLISH | commands | shard channels subscribed |\n|---|---|---|---|---|---|---|---|\n")
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, "| %s | %s | %d | %.3f | %d | %d | %d | %d |\n", n.Addr, n.Role, len(n.Rooms), n.Cores, n.SPublish, n.Publish, n.Commands, len(n.ShardChannels))
	}
	b.WriteString("\n| room | master | visitors | told admitted | told twice |\n|---|---|---|---|---|\n")
	for _, x := range r.Rooms {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |\n", x.Room, x.Master, x.Visitors, x.Told, x.Twice)
	}
	fmt.Fprintf(&b, "\nInstances' CPU (cores): %.3f\n\nEach master carried only its own rooms' pub/sub (no PUBLISH anywhere, SPUBLISH only on masters owning rooms, only their rooms' channels subscribed there): **%v**\n", r.InstanceCores, r.OnlyOwnRooms)
	return b.String()
}
