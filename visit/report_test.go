package visit

import (
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/report"
)

// countingReport records what the visitor API reports.
type countingReport struct {
	mu      sync.Mutex
	joined  []string
	told    []report.Promise
	refused map[string]int
	left    int
}

func (r *countingReport) Joined(room, visitor string, _ time.Time, told report.Promise) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.joined = append(r.joined, visitor)
	r.told = append(r.told, told)
}

func (r *countingReport) Refused(room, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused[reason]++
}

func (r *countingReport) Left(string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.left++
}

func (r *countingReport) Ended(string, time.Time, time.Time) {}

func TestRefusalReasons(t *testing.T) {
	for code, want := range map[string]string{
		"rate_limited": "rate_limit", "pow_unsolved": "pow", "pow_used": "pow", "pow_required": "",
		"invite_required": "invite", "invalid_invite": "invite", "invite_used": "invite",
		"invalid_json": "", "unavailable": "", "room_not_found": "",
	} {
		if got := refusal(code); got != want {
			t.Errorf("refusal(%q) = %q, want %q", code, got, want)
		}
	}
}

// A new place is an arrival with the wait told (and a refresh is not), a
// refused join counts by its reason and a leave counts once.
func TestJoinReports(t *testing.T) {
	f := newFixture(t, nil)
	rep := &countingReport{refused: map[string]int{}}
	f.api.d.Report = rep
	r := f.do("POST", "/api/v1/rooms/shop/join", "")
	if r.Code != 200 {
		t.Fatalf("join: %d %s", r.Code, r.Raw)
	}
	if r := f.do("POST", "/api/v1/rooms/shop/join", "", "X-Visitor", r.str("visitor")); r.Code != 200 {
		t.Fatalf("refresh: %d %s", r.Code, r.Raw)
	}
	f.q.joinErrs = []error{queue.ErrInviteRequired}
	if r := f.do("POST", "/api/v1/rooms/shop/join", ""); r.errCode() != "invite_required" {
		t.Fatalf("invite-only join: %d %s", r.Code, r.Raw)
	}
	if r := f.do("POST", "/api/v1/rooms/Bad_Room/join", ""); r.Code != 400 {
		t.Fatalf("bad room: %d %s", r.Code, r.Raw)
	}
	cred := r.str("visitor")
	for range 2 {
		if r := f.do("DELETE", "/api/v1/rooms/shop/queue", "", "X-Visitor", cred); r.Code != 204 {
			t.Fatalf("leave: %d %s", r.Code, r.Raw)
		}
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if len(rep.joined) != 1 || rep.refused["invite"] != 1 || len(rep.refused) != 1 || rep.left != 1 {
		t.Fatalf("reported joins %v, refusals %v, leaves %d", rep.joined, rep.refused, rep.left)
	}
	if want := (report.Promise{ETA: 30 * time.Second, Low: 20 * time.Second, High: 45 * time.Second}); rep.told[0] != want {
		t.Fatalf("told %+v, want %+v", rep.told[0], want)
	}
}
