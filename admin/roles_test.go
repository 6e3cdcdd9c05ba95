package admin

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/schedule"
)

// roleTable reads the table of docs/admin.md that says what each role may
// do: each row's first cell (a route, or an act in words, without its
// backticks) and its least role, with whether a service key may call it.
func roleTable(t *testing.T) (rows map[string]Role, service map[string]bool) {
	t.Helper()
	f, err := os.Open("../docs/admin.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, service = map[string]Role{}, map[string]bool{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "| call or act | least role |":
			in = true
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "|"):
			if len(rows) > 0 {
				return rows, service
			}
			continue
		case strings.HasPrefix(line, "| ---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 2 {
			t.Fatalf("docs/admin.md: a row of the role table with %d cells: %s", len(cells), line)
		}
		what := strings.ReplaceAll(strings.TrimSpace(cells[0]), "`", "")
		roleCell, byService := strings.CutSuffix(strings.TrimSpace(cells[1]), ", or a service key")
		r, ok := ParseRole(roleCell)
		if !ok {
			t.Fatalf("docs/admin.md: %q has no role: %s", what, line)
		}
		if _, dup := rows[what]; dup {
			t.Fatalf("docs/admin.md: %q is in the role table twice", what)
		}
		rows[what], service[what] = r, byService
	}
	if len(rows) == 0 {
		t.Fatal("docs/admin.md has no role table")
	}
	return rows, service
}

var docRoute = regexp.MustCompile(`^(GET|POST|PUT|DELETE) (/\S*)$`)

// The role table of docs/admin.md and the code's lists (Routes,
// PageRoutes, ServiceRoutes and Acts) say the same, both ways.
func TestRoleTableIsTheCodes(t *testing.T) {
	rows, service := roleTable(t)
	code := map[string]Role{}
	for route, r := range Routes {
		method, path, _ := strings.Cut(route, " ")
		path = regexp.MustCompile(`:(\w+)`).ReplaceAllString(path, "{$1}")
		code[method+" /api/v1/admin"+path] = r
	}
	for route, r := range PageRoutes {
		code[route] = r
	}
	for act, r := range Acts {
		code[act] = r
	}
	for what, r := range rows {
		want, ok := code[what]
		switch {
		case !ok:
			t.Errorf("docs/admin.md lists %q, which the code does not", what)
		case want != r:
			t.Errorf("docs/admin.md gives %q the role %s, the code %s", what, r, want)
		}
		if m := docRoute.FindStringSubmatch(what); m != nil {
			if got := ServiceRoute(m[1], m[2]); got != service[what] {
				t.Errorf("docs/admin.md says a service key may call %q: %v; the code: %v", what, service[what], got)
			}
		} else if service[what] {
			t.Errorf("docs/admin.md lets a service key do %q, which is no route", what)
		}
	}
	for what := range code {
		if _, ok := rows[what]; !ok {
			t.Errorf("the code gives %q a role that docs/admin.md does not list", what)
		}
	}
}

// Every act of the role table is tried with each role: a role at or above
// the act's does it, one below is refused (403 forbidden naming the act,
// or 404 room_not_found for a room it would create) and changes nothing.
func TestActsByRole(t *testing.T) {
	store := newMemStore()
	events := &memEvents{evs: map[string]schedule.Event{}}
	app := newTestAPIEvents(t, store, events)
	from := time.Now().Add(time.Hour)
	span := func(extra string) string {
		return fmt.Sprintf(`"startsAt":%q,"endsAt":%q%s`, from.UTC().Format(time.RFC3339), from.Add(time.Hour).UTC().Format(time.RFC3339), extra)
	}
	prequeue := fmt.Sprintf(`,"prequeueAt":%q`, from.Add(-time.Minute).UTC().Format(time.RFC3339))
	create := func(room string) {
		if r := call(t, app, adminSecret, "POST", "/rooms", `{"room":"`+room+`"}`); r.code != 201 {
			t.Fatalf("create %s: %+v", room, r)
		}
	}
	// Each act: how a key does it in room (which the act makes before,
	// unless it is about creating one), and whether it was done.
	type try struct {
		before func(room string)
		do     func(key, room string) answer
		done   func(room string) bool
	}
	hasEvent := func(name string) func(room string) bool {
		return func(room string) bool { _, err := events.Get(context.Background(), room, name); return err == nil }
	}
	eventTry := func(body string) try {
		return try{
			before: create,
			do: func(key, room string) answer {
				return call(t, app, key, "POST", "/rooms/"+room+"/events", `{"name":"e",`+body+`}`)
			},
			done: hasEvent("e"),
		}
	}
	tries := map[string]try{
		ActCreateRoom: {
			before: func(string) {},
			do:     func(key, room string) answer { return call(t, app, key, "POST", "/rooms/"+room+"/pause", "") },
			done:   func(room string) bool { ok, _ := store.RoomExists(context.Background(), room); return ok },
		},
		ActChangeSettings: {
			before: create,
			do:     func(key, room string) answer { return call(t, app, key, "PUT", "/rooms/"+room, `{"batch":12}`) },
			done:   func(room string) bool { c, _ := store.RoomConfig(context.Background(), room); return c.Batch == 12 },
		},
		ActEventSettings: eventTry(span(`,"settings":{"seats":100}`)),
		ActEventShuffle:  eventTry(span(prequeue + `,"shuffleAtStart":true`)),
		ActEventClose:    eventTry(span(`,"atEnd":"close"`)),
		ActOthersEvent: {
			before: func(room string) {
				create(room)
				if r := call(t, app, adminSecret, "POST", "/rooms/"+room+"/events", `{"name":"e",`+span(`,"settings":{"message":"On."}`)+`}`); r.code != 201 {
					t.Fatalf("admin's event: %+v", r)
				}
			},
			do:   func(key, room string) answer { return call(t, app, key, "DELETE", "/rooms/"+room+"/events/e", "") },
			done: func(room string) bool { return !hasEvent("e")(room) },
		},
	}
	keys := []struct {
		secret string
		role   Role
	}{{adminSecret, Admin}, {opsSecret, Operator}, {viewSecret, ReadOnly}}
	n := 0
	for act, need := range Acts {
		tr, ok := tries[act]
		if !ok {
			t.Errorf("the act %q is not tried", act)
			continue
		}
		for _, k := range keys {
			n++
			room := fmt.Sprintf("act-%d", n)
			t.Run(act+"/"+k.role.String(), func(t *testing.T) {
				tr.before(room)
				r := tr.do(k.secret, room)
				if k.role >= need {
					if r.code/100 != 2 || !tr.done(room) {
						t.Fatalf("refused or not done: %+v", r)
					}
					return
				}
				if tr.done(room) {
					t.Fatalf("done by the %s role: %+v", k.role, r)
				}
				msg, _ := r.body["error"].(map[string]any)["message"].(string)
				switch {
				case r.code == 404 && r.errCode() == "room_not_found" && act == ActCreateRoom && k.role >= Operator:
				case r.code == 403 && r.errCode() == "forbidden" && (strings.Contains(msg, "("+"to "+act+")") || k.role < Operator):
				default:
					t.Fatalf("refused wrongly: %+v", r)
				}
			})
		}
	}
}

// The events an operator may write do no more than an operator may do
// directly; an event an admin wrote (or changed) stays the admin's.
func TestEventsByRole(t *testing.T) {
	store := newMemStore()
	app := newTestAPIEvents(t, store, &memEvents{evs: map[string]schedule.Event{}})
	if r := call(t, app, adminSecret, "POST", "/rooms", `{"room":"drop"}`); r.code != 201 {
		t.Fatalf("create: %+v", r)
	}
	at := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	ev := func(name string, hour int, extra string) string {
		return fmt.Sprintf(`{"name":%q,"startsAt":%q,"endsAt":%q%s}`, name, at(time.Duration(hour)*time.Hour), at(time.Duration(hour)*time.Hour+30*time.Minute), extra)
	}
	steps := []struct {
		what, key, method, path, body string
		status                        int
		code                          string
	}{
		{"an operator's pre-queue in order of arrival", opsSecret, "POST", "/rooms/drop/events", ev("ops", 1, fmt.Sprintf(`,"prequeueAt":%q,"settings":{"message":"Soon."}`, at(50*time.Minute))), 201, ""},
		{"the operator changes it", opsSecret, "PUT", "/rooms/drop/events/ops", ev("ops", 1, `,"settings":{"message":"Later."}`), 200, ""},
		{"the operator makes it close at its end", opsSecret, "PUT", "/rooms/drop/events/ops", ev("ops", 1, `,"atEnd":"close"`), 403, "forbidden"},
		{"a body that names its writer", adminSecret, "POST", "/rooms/drop/events", ev("forged", 2, `,"by":"operator"`), 400, "invalid_field"},
		{"the admin changes the operator's event", adminSecret, "PUT", "/rooms/drop/events/ops", ev("ops", 1, `,"settings":{"message":"Admin's."}`), 200, ""},
		{"the operator rewrites it again", opsSecret, "PUT", "/rooms/drop/events/ops", ev("ops", 1, `,"settings":{"message":"Mine."}`), 403, "forbidden"},
		{"the operator deletes it", opsSecret, "DELETE", "/rooms/drop/events/ops", "", 403, "forbidden"},
		{"the admin deletes it", adminSecret, "DELETE", "/rooms/drop/events/ops", "", 204, ""},
		{"an operator's event in a room nobody created", opsSecret, "POST", "/rooms/nowhere/events", ev("x", 3, ""), 404, "room_not_found"},
	}
	for _, s := range steps {
		r := call(t, app, s.key, s.method, s.path, s.body)
		if r.code != s.status || r.errCode() != s.code {
			t.Fatalf("%s: %d %s, want %d %s: %+v", s.what, r.code, r.errCode(), s.status, s.code, r.body)
		}
	}
	r := call(t, app, viewSecret, "GET", "/rooms/drop/events", "")
	if evs, _ := r.body["events"].([]any); r.code != 200 || len(evs) != 0 {
		t.Fatalf("events left: %+v", r)
	}
	if _, ok := store.rooms["nowhere"]; ok {
		t.Fatal("an operator's event made a room")
	}
}
