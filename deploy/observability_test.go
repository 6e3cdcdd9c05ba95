//go:build deploy

// The alert rules and the dashboard name metrics; these tests check each
// name against what a running server exports. They need nothing but the Go
// toolchain; `make test-deploy` runs them (cd deploy && go test -tags deploy ./...).
package deploy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/waitroom/waitroom/deploy/deploytest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// prometheusOwn are series Prometheus makes itself, never the server.
var prometheusOwn = map[string]bool{"up": true}

var metricName = regexp.MustCompile(`\b(?:waitroom|process|go)_[a-z0-9_]+\b|\bup\b`)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// ruleMetrics returns the metric names each alert's expression uses.
func ruleMetrics(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	used := map[string][]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			names := metricName.FindAllString(r.Expr, -1)
			if len(names) == 0 {
				t.Errorf("alert %s: no metric in %q", r.Alert, r.Expr)
			}
			for _, n := range names {
				used[n] = append(used[n], "alert "+r.Alert)
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("alerts.yaml names no metric")
	}
	return used
}

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var dashVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// dashboardMetrics returns the metric names the dashboard's panels and
// variables use, and checks that every $variable they name is defined.
func dashboardMetrics(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("grafana", "waitroom.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("waitroom.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard without uid or title")
	}
	vars := map[string]bool{}
	var queries []string
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok {
				queries = append(queries, s)
			}
		}
	}
	for _, want := range []string{"datasource", "room", "instance"} {
		if !vars[want] {
			t.Errorf("dashboard has no $%s variable", want)
		}
	}
	used := map[string][]string{}
	check := func(where, expr string) {
		for _, m := range dashVar.FindAllStringSubmatch(expr, -1) {
			if !vars[m[1]] && !strings.HasPrefix(m[1], "__") {
				t.Errorf("%s: $%s is not a dashboard variable", where, m[1])
			}
		}
		for _, n := range metricName.FindAllString(expr, -1) {
			used[n] = append(used[n], where)
		}
	}
	for _, q := range queries {
		check("variable query "+q, q)
	}
	panels := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		panels++
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the $datasource variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("panel %q: empty query", p.Title)
			}
			check("panel "+p.Title, tg.Expr)
		}
	}
	if panels < 10 {
		t.Errorf("dashboard has %d panels", panels)
	}
	return used
}

// exported starts the server on the embedded Redis with room demo in a
// rooms file (per-room series are only for rooms an operator made), joins
// it once and returns the sample names on /metrics once the room's series
// and its first admission are there.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	bin := deploytest.Binary(t)
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	if err := os.WriteFile(rooms, []byte("rooms:\n  demo:\n    batch: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := deploytest.Start(t, bin, nil, "-addr", "127.0.0.1:0", "-rooms", rooms, "-public-metrics")
	base := "http://" + s.Addr
	resp, err := http.Post(base+"/api/v1/rooms/demo/join", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var joined struct{ Visitor string }
	err = json.NewDecoder(resp.Body).Decode(&joined)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || joined.Visitor == "" {
		t.Fatalf("join: %d %v %+v", resp.StatusCode, err, joined)
	}
	// One status poll, so the poll counter has a series.
	req, _ := http.NewRequest("GET", base+"/api/v1/rooms/demo/status", nil)
	req.Header.Set("X-Visitor", joined.Visitor)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status: %d", resp.StatusCode)
	}
	var names map[string]bool
	found := false
	defer func() { // runs too when the wait below fails the test
		if !found {
			t.Logf("have %d names\n%s", len(names), s.Log())
		}
	}()
	// The room cache refreshes on its own tick: scrape until it has.
	waitfor.Until(t, 20*time.Second, "waitroom_waiting, waitroom_admissions_total and waitroom_polls_total after a join and a poll", func() bool {
		names = scrape(t, base+"/metrics")
		return names["waitroom_waiting"] && names["waitroom_admissions_total"] && names["waitroom_polls_total"]
	})
	found = true
	return names
}

func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// TestMetricsTheRulesAndDashboardName: every metric an alert or a panel
// names is on a freshly started server's /metrics, before any event: the
// labelled counters are created at 0, so none appears only later.
func TestMetricsTheRulesAndDashboardName(t *testing.T) {
	used := ruleMetrics(t)
	for n, where := range dashboardMetrics(t) {
		used[n] = append(used[n], where...)
	}
	have := exported(t)
	var missing []string
	for n, where := range used {
		if !prometheusOwn[n] && !have[n] {
			missing = append(missing, n+" (used by "+strings.Join(dedupe(where), ", ")+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("not exported: %s", m)
	}
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
