package visit

import (
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// A push request is checked before it is handed over: the transport is
// on, the visitor is known (by credential or connect ticket), and the
// instance is not draining; the target holds the credential's ticket.
func TestPushEntry(t *testing.T) {
	f := newFixture(t, &Options{NoSSE: true})
	id, _ := f.signer.NewVisitor()
	cred := f.signer.TicketCredential(id, wire.Ticket{Room: "shop", Seq: 3, IssuedAt: time.Now()})
	if r := f.do("GET", "/api/v1/rooms/shop/sse?visitor="+url.QueryEscape(cred), ""); r.Code != 503 || r.errCode() != "transport_disabled" {
		t.Fatalf("sse turned off: %d %s", r.Code, r.Raw)
	}
	if r := f.do("GET", "/api/v1/rooms/shop/ws", ""); r.Code != 401 || r.errCode() != "missing_visitor" {
		t.Fatalf("ws without a visitor: %d %s", r.Code, r.Raw)
	}
	if r := f.do("GET", "/api/v1/rooms/shop/ws?visitor="+url.QueryEscape(cred), ""); r.Code != 204 {
		t.Fatalf("ws: %d %s", r.Code, r.Raw)
	}
	if got := f.push.targets; len(got) != 1 || got[0].Room != "shop" || got[0].Visitor != id || got[0].Ticket.Seq != 3 {
		t.Fatalf("targets %+v", got)
	}

	// A connect ticket stands for the credential, once.
	tk := f.do("POST", "/api/v1/rooms/shop/ticket", "", "X-Visitor", cred)
	ticket := tk.str("ticket")
	if tk.Code != 200 || ticket == "" || tk.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("ticket: %d %s", tk.Code, tk.Raw)
	}
	if r := f.do("GET", "/api/v1/rooms/shop/ws?ticket="+url.QueryEscape(ticket), ""); r.Code != 204 || f.push.targets[1].Visitor != id || f.push.targets[1].Ticket.Seq != 0 {
		t.Fatalf("ws with a ticket: %d %s %+v", r.Code, r.Raw, f.push.targets)
	}
	if r := f.do("GET", "/api/v1/rooms/shop/ws?ticket="+url.QueryEscape(ticket), ""); r.Code < 400 || r.errCode() == "" {
		t.Fatalf("the ticket again: %d %s", r.Code, r.Raw)
	}

	f.draining = true
	if r := f.do("GET", "/api/v1/rooms/shop/ws?visitor="+url.QueryEscape(cred), ""); r.Code != 503 || r.errCode() != "draining" {
		t.Fatalf("draining: %d %s", r.Code, r.Raw)
	}
}
