package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/report"
)

// A run through a server with its tick loop: known joins, leaves and
// admissions come back in the room's report, in JSON and in CSV.
func TestRoomReport(t *testing.T) {
	eachRedis(t, func(t *testing.T, srv *redistest.Server, client string) {
		ts := startServerOpts(t, srv, client, &serverOptions{}, withServiceKeys(t, func(c *config) {
			withAdmin(c)
			c.Capacity.Batch, c.Capacity.Tick = 4, 50*time.Millisecond
		}))
		checkRoomReport(t, ts)
	})
}

func checkRoomReport(t *testing.T, ts *testServer) {
	op := newVisitor(t, ts.URL)
	if r := op.admin("POST", "/rooms", `{"room":"drop"}`); r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Raw)
	}
	if r := op.admin("POST", "/rooms/drop/pause", ""); r.Code != 200 {
		t.Fatalf("pause: %d %s", r.Code, r.Raw)
	}
	var vs []*visitor
	for range 12 {
		v := newVisitor(t, ts.URL)
		v.join("drop")
		vs = append(vs, v)
	}
	for _, v := range vs[:2] {
		if r := v.do("DELETE", "/api/v1/rooms/drop/queue", ""); r.Code != 204 {
			t.Fatalf("leave: %d %s", r.Code, r.Raw)
		}
	}
	if r := op.admin("POST", "/rooms/drop/resume", ""); r.Code != 200 {
		t.Fatalf("resume: %d %s", r.Code, r.Raw)
	}
	// Three of the admitted spend their tokens: their time on the origin.
	for _, v := range vs[2:5] {
		var st reply
		waitfor.Until(t, 10*time.Second, "admission", func() bool {
			st = v.status("drop")
			return st.str("status") == "admitted"
		})
		nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
		waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
		if r := consumeAs(v, testServiceKey, fmt.Sprintf(`{"token":%q,"visitor":%q}`, st.str("token"), v.cred)); r.Code != 200 {
			t.Fatalf("consume: %d %s", r.Code, r.Raw)
		}
	}
	var rep report.Report
	defer func() {
		if t.Failed() {
			t.Logf("last report: %+v", rep.Totals)
		}
	}()
	waitfor.Until(t, 15*time.Second, "the report of 10 admissions, timed", func() bool {
		r := op.admin("GET", "/rooms/drop/report", "")
		if r.Code != 200 || json.Unmarshal([]byte(r.Raw), &rep) != nil {
			t.Fatalf("report: %d %s", r.Code, r.Raw)
		}
		return rep.Totals.Admitted == 10 && rep.Totals.QueueSeconds.Count == 10 && rep.Totals.OriginSeconds.Count == 3
	})
	tot := rep.Totals
	if tot.Arrivals != 12 || tot.Left.Waiting != 2 || tot.PeakWaiting < 10 || tot.PeakWaiting > 12 || tot.Refused != (report.Refused{}) {
		t.Fatalf("totals %+v", tot)
	}
	if tot.QueueSeconds.P99 > 60 || len(rep.Series) == 0 || rep.Room != "drop" {
		t.Fatalf("report %+v", rep)
	}
	q := url.Values{"from": {rep.From.Format(time.RFC3339)}, "to": {rep.To.Format(time.RFC3339)}, "format": {"csv"}}
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/admin/rooms/drop/report?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") || len(lines) != len(rep.Series)+1 {
		t.Fatalf("csv: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	page, err := noKeepAlive.Get(ts.URL + "/admin/report")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(body), "report.js") || page.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("report page: %d %v", page.StatusCode, page.Header)
	}
}

// Every bad report request gets its own code.
func TestRoomReportErrors(t *testing.T) {
	ts := startServer(t, nil, "rueidis", withAdmin)
	op := newVisitor(t, ts.URL)
	now := time.Now().UTC()
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/rooms/drop/report?from=yesterday", 400, "invalid_from"},
		{"/rooms/drop/report?to=2026-13-01T00:00:00Z", 400, "invalid_to"},
		{"/rooms/drop/report?from=" + now.Format(time.RFC3339) + "&to=" + now.Add(-time.Hour).Format(time.RFC3339), 400, "invalid_range"},
		{"/rooms/drop/report?from=" + now.Add(-40*24*time.Hour).Format(time.RFC3339), 400, "range_too_long"},
		{"/rooms/drop/report?format=xml", 400, "invalid_format"},
		{"/rooms/Drop!/report", 400, "invalid_room"},
		{"/rooms/drop/events/launch/report", 404, "event_not_found"},
	} {
		if r := op.admin("GET", tc.path, ""); r.Code != tc.code || r.errCode() != tc.want {
			t.Errorf("%s: %d %s, want %d %s", tc.path, r.Code, r.Raw, tc.code, tc.want)
		}
	}
	if r := op.admin("GET", "/rooms/drop/report", ""); r.Code != 200 || !strings.Contains(r.Raw, `"soldOutAt":null`) {
		t.Errorf("empty report: %d %s", r.Code, r.Raw)
	}
}
