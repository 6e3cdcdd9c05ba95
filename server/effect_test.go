package main

import (
	"slices"
	"testing"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

// TestEveryEffectHasASetting: each setting is spoken for by exactly one
// effect rule, or is one of the settings with nothing to say beyond the
// change; a new setting without its effect fails here.
func TestEveryEffectHasASetting(t *testing.T) {
	count := map[string]int{}
	for _, r := range effectRules {
		for _, f := range r.fields {
			count[f]++
		}
	}
	for _, f := range silentSettings {
		count[f]++
	}
	for _, f := range settings.Fields {
		if count[f.Name] != 1 {
			t.Errorf("setting %s is named by %d effect rules (with silentSettings), want 1", f.Name, count[f.Name])
		}
		delete(count, f.Name)
	}
	for f := range count {
		t.Errorf("effect rule names %q, which is no setting", f)
	}
}

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
	if routeRole("GET", "/api/v1/admin/settings") != roleReadOnly {
		t.Error("a read-only key cannot read the settings' description")
	}
}
