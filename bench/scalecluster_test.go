package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestScaleClusterQuick(t *testing.T) {
	needTools(t, "go", "redis-server", "redis-cli")
	dir := t.TempDir()
	rep, err := runScaleCluster(testContext(t, 3*time.Minute), scaleOptions{Out: dir, Quick: true, N: 300, Admit: 3 * time.Second, Progress: testWriter{t}}, 6, "test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "scale-cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fromFile scaleClusterReport
	if err := json.Unmarshal(b, &fromFile); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "scale-cluster.md")); err != nil {
		t.Fatal(err)
	}
	if len(fromFile.Nodes) != 6 || len(fromFile.Rooms) != 6 {
		t.Fatalf("report has %d nodes and %d rooms, want 6 and 6", len(fromFile.Nodes), len(fromFile.Rooms))
	}
	if !rep.OnlyOwnRooms {
		t.Errorf("a master carried another master's rooms' pub/sub: %+v", rep.Nodes)
	}
	masters := map[string]bool{}
	for _, r := range rep.Rooms {
		masters[r.Master] = true
		if r.Told != r.Visitors || r.Twice != 0 {
			t.Errorf("room %s: %d of %d told, %d twice", r.Room, r.Told, r.Visitors, r.Twice)
		}
	}
	if len(masters) != 3 {
		t.Errorf("rooms on %d masters, want 3", len(masters))
	}
}
