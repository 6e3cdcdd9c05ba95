package main

import (
	"slices"
	"testing"

	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

// TestAdminSettingsDescribed: the dashboard's form is built from the
// schema the server serves, to any admin key.
func TestAdminSettingsDescribed(t *testing.T) {
	ts := startServer(t, redistest.StartMini(t), "go-redis", withAdmin)
	v := newVisitor(t, ts.URL)
	r := v.admin("GET", "/settings", "")
	list, _ := r.Body["settings"].([]any)
	if r.Code != 200 || len(list) != len(settings.Fields) {
		t.Fatalf("settings: %d %s", r.Code, r.Raw)
	}
	var names, steer []string
	for _, e := range list {
		m, _ := e.(map[string]any)
		names = append(names, m["name"].(string))
		if m["steer"] == true {
			steer = append(steer, m["name"].(string))
		}
	}
	if !slices.Equal(names, settings.Names()) || !slices.Equal(steer, []string{"paused", "message"}) {
		t.Fatalf("names %v, steer %v", names, steer)
	}
	if admin.RouteRole("GET", "/api/v1/admin/settings") != admin.ReadOnly {
		t.Error("a read-only key cannot read the settings' description")
	}
}
