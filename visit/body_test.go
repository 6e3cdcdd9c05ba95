package visit

import (
	"testing"

	"github.com/waitroom/waitroom/queue"
)

// A join's body is read the same whether or not it has fields: an object
// without fields is no proof and no invite, white space alone is no
// object to the proof-of-work decoder, anything but an object is
// invalid_json.
func TestJoinBodies(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		plain, pow int
		powCode    string
		plainCode  string
	}{
		{"none", "", 200, 428, "pow_required", ""},
		{"empty object", "{}", 200, 428, "pow_required", ""},
		{"empty object, spaced", " {\r\n\t} \n", 200, 428, "pow_required", ""},
		{"spaces only", "   ", 200, 400, "invalid_field", ""},
		{"vertical tab after", "{}\v", 200, 400, "invalid_field", ""},
		{"other fields", `{"x":1}`, 200, 428, "pow_required", ""},
		{"pow of the wrong type", `{"pow":"x"}`, 200, 400, "invalid_field", ""},
		{"pow null", `{"pow":null}`, 200, 428, "pow_required", ""},
		{"array", "[1]", 400, 400, "invalid_json", "invalid_json"},
		{"broken", "{", 400, 400, "invalid_json", "invalid_json"},
		{"object and more", "{} {}", 400, 400, "invalid_json", "invalid_json"},
	} {
		f := newFixture(t, nil)
		if r := f.do("POST", "/api/v1/rooms/shop/join", tc.body); r.Code != tc.plain || r.errCode() != tc.plainCode {
			t.Errorf("%s, plain room: %d %s, want %d %q", tc.name, r.Code, r.Raw, tc.plain, tc.plainCode)
		}
		f.rooms.powBits = 6
		if r := f.do("POST", "/api/v1/rooms/shop/join", tc.body); r.Code != tc.pow || r.errCode() != tc.powCode {
			t.Errorf("%s, proof-of-work room: %d %s, want %d %q", tc.name, r.Code, r.Raw, tc.pow, tc.powCode)
		}
	}
}

// A join the limiter let through is limited again when the room's limit
// changed under it; a known visitor's is not.
func TestJoinRegateLimit(t *testing.T) {
	f := newFixture(t, nil)
	f.q.joinErrs = []error{queue.ErrSettingsChanged}
	f.rooms.onReload = func(r *fakeRooms) { r.rate, r.burst = 0.001, 1 }
	if r := f.do("POST", "/api/v1/rooms/shop/join", ""); r.Code != 200 {
		t.Fatalf("first join under a new limit: %d %s", r.Code, r.Raw)
	}
	f.rooms.rate, f.rooms.burst = 0, 0
	f.q.joinErrs = []error{queue.ErrSettingsChanged}
	if r := f.do("POST", "/api/v1/rooms/shop/join", ""); r.Code != 429 || r.errCode() != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second new visitor under the new limit: %d %s", r.Code, r.Raw)
	}
}
