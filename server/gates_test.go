package main

import (
	"testing"

	"github.com/waitroom/waitroom/internal/redistest"
)

// Every gate of a join holds from the moment the create or change call
// returns, on every instance: the change is made through instance A and
// the join goes at once to instance B, whose room cache held the room's
// earlier settings (or none).
func TestGatesHoldOnEveryInstanceAtOnce(t *testing.T) {
	srv := redistest.StartReal(t)
	closed := func(c *config) { withAdmin(c); c.OpenRooms = false }
	a := startServer(t, srv, "rueidis", closed)
	b := startServer(t, srv, "rueidis", closed)
	opA := newVisitor(t, a.URL)
	fresh := func() *visitor { return newVisitor(t, b.URL) }
	joinB := func(room string) reply { return fresh().do("POST", "/api/v1/rooms/"+room+"/join", "") }
	create := func(body string) {
		t.Helper()
		if r := opA.admin("POST", "/rooms", body); r.Code != 201 {
			t.Fatalf("create %s: %d %s", body, r.Code, r.Raw)
		}
	}
	change := func(room, body string) {
		t.Helper()
		if r := opA.admin("PUT", "/rooms/"+room, body); r.Code != 200 {
			t.Fatalf("change %s: %d %s", body, r.Code, r.Raw)
		}
	}
	// seen makes B cache the room's settings as they are now.
	seen := func(room string) {
		t.Helper()
		if r := joinB(room); r.Code != 200 {
			t.Fatalf("join %s before the change: %d %s", room, r.Code, r.Raw)
		}
	}

	t.Run("proof of work at create", func(t *testing.T) {
		create(`{"room":"pow-new","powBits":12}`)
		for i := range 8 {
			if r := joinB("pow-new"); r.Code != 428 || r.errCode() != "pow_required" {
				t.Fatalf("join %d without proof: %d %s", i, r.Code, r.Raw)
			}
		}
	})
	t.Run("proof of work by a change", func(t *testing.T) {
		create(`{"room":"pow-later"}`)
		seen("pow-later")
		change("pow-later", `{"powBits":12}`)
		for i := range 8 {
			if r := joinB("pow-later"); r.Code != 428 || r.errCode() != "pow_required" {
				t.Fatalf("join %d without proof: %d %s", i, r.Code, r.Raw)
			}
		}
	})
	t.Run("settings kept when Redis lost them", func(t *testing.T) {
		create(`{"room":"kept","message":"Doors at nine.","joinRate":50}`)
		seen("kept")
		redisCmd(t, srv.Addr)("FLUSHALL")
		// The join finds the settings changed (gone) and reads them again:
		// B keeps what it read, to gate with and to write back.
		if r := joinB("kept"); r.Code != 200 {
			t.Fatalf("join after the loss: %d %s", r.Code, r.Raw)
		}
		if c, ok := b.rooms.RoomSettings("kept"); !ok || c.Message != "Doors at nine." || c.JoinRate != 50 {
			t.Fatalf("remembered settings: %+v %v", c, ok)
		}
		if rate, _ := b.rooms.JoinLimit("kept"); rate != 50 {
			t.Fatalf("join limit after the loss: %v", rate)
		}
	})
	t.Run("join limit by a change", func(t *testing.T) {
		create(`{"room":"limited"}`)
		seen("limited")
		change("limited", `{"joinRate":0.01,"joinBurst":1}`)
		if r := joinB("limited"); r.Code != 200 {
			t.Fatalf("first join: %d %s", r.Code, r.Raw)
		}
		if r := joinB("limited"); r.Code != 429 || r.errCode() != "rate_limited" {
			t.Fatalf("second new visitor from one address: %d %s", r.Code, r.Raw)
		}
	})
	t.Run("invite-only at create and by a change", func(t *testing.T) {
		create(`{"room":"invited","inviteOnly":true}`)
		if r := joinB("invited"); r.Code != 403 || r.errCode() != "invite_required" {
			t.Fatalf("join without an invite: %d %s", r.Code, r.Raw)
		}
		create(`{"room":"invited-later"}`)
		seen("invited-later")
		change("invited-later", `{"inviteOnly":true}`)
		if r := joinB("invited-later"); r.Code != 403 || r.errCode() != "invite_required" {
			t.Fatalf("join without an invite: %d %s", r.Code, r.Raw)
		}
	})
	t.Run("method by a change", func(t *testing.T) {
		create(`{"room":"closing"}`)
		seen("closing")
		change("closing", `{"method":"reject","message":"Sold out."}`)
		if r := joinB("closing"); r.Code != 200 || r.str("status") != "closed" || r.str("message") != "Sold out." {
			t.Fatalf("join a rejecting room: %d %s", r.Code, r.Raw)
		}
		change("closing", `{"method":"passthrough","message":""}`)
		if r := joinB("closing"); r.Code != 200 || r.str("status") != "admitted" {
			t.Fatalf("join a passthrough room: %d %s", r.Code, r.Raw)
		}
	})
}
