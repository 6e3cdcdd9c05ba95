package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/waitroom/waitroom/internal/waitfor"
)

// checkedTransport validates every response it carries against the
// OpenAPI document: its status must be documented for the operation, its
// body must fit the schema.
type checkedTransport struct {
	t      *testing.T
	router routers.Router
	mu     sync.Mutex
	seen   map[string]bool // operationId status
}

func newCheckedTransport(t *testing.T) *checkedTransport {
	t.Helper()
	raw, err := os.ReadFile("../static/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("static/openapi.json is not a valid document: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &checkedTransport{t: t, router: router, seen: map[string]bool{}}
}

func (ct *checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := ct.router.FindRoute(req)
	if err != nil {
		ct.t.Errorf("%s %s: not in the document: %v", req.Method, req.URL.Path, err)
		return resp, nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		ct.t.Errorf("%s %s → %d %s: %v", req.Method, req.URL.Path, resp.StatusCode, body, err)
	}
	ct.mu.Lock()
	ct.seen[fmt.Sprintf("%s %d", route.Operation.OperationID, resp.StatusCode)] = true
	ct.mu.Unlock()
	return resp, nil
}

// TestOpenAPIResponses walks the visitor's, the service's, the admin's and
// the probes' operations and validates every answer against the document
// with kin-openapi.
func TestOpenAPIResponses(t *testing.T) {
	ts := startServer(t, nil, "rueidis", withServiceKeys(t, func(c *config) { c.AdminKey = testAdminKey; c.Demo = true }))
	ct := newCheckedTransport(t)
	v := newVisitor(t, ts.URL)
	v.http.Transport = ct
	v.join("drop")
	v.status("drop")
	v.do("POST", "/api/v1/rooms/drop/ticket", "")
	st := ts.admitUntil(t, v, "drop")
	tok := st.str("token")
	body := fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, v.cred)
	v.do("POST", "/api/v1/tokens/verify", body) // 425 or, on a slow machine, 200
	v.do("POST", "/api/v1/tokens/verify", fmt.Sprintf(`{"token":%q}`, tok))
	consumeAs(v, testServiceKey, fmt.Sprintf(`{"token":%q}`, tok))
	v.do("POST", "/api/v1/rooms/drop/orders", "")
	v.do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer nope")
	consumeAs(v, "", body)
	consumeAs(v, testServiceKey, `{"token":"abc"}`)
	consumeAs(v, testServiceKey, `{}`)
	nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
	waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
	v.do("POST", "/api/v1/tokens/verify", body)
	consumeAs(v, testServiceKey, body)
	consumeAs(v, testServiceKey, body)
	v.do("DELETE", "/api/v1/rooms/drop/queue", "")
	for _, p := range []string{"/.well-known/jwks.json", "/healthz", "/readyz", "/api/v1/openapi.json", "/api/v1/rooms/drop/lottery", "/api/v1/rooms/drop/draw"} {
		v.do("GET", p, "")
	}
	for _, p := range []string{"/whoami", "/rooms", "/rooms/drop/stats", "/rooms/drop/audit"} {
		v.do("GET", "/api/v1/admin"+p, "", "Authorization", "Bearer "+testAdminKey)
	}
	v.do("GET", "/api/v1/admin/rooms", "")
	adm := func(method, path, body string) {
		v.do(method, "/api/v1/admin"+path, body, "Authorization", "Bearer "+testAdminKey, "Content-Type", "application/json")
	}
	adm("POST", "/rooms", `{"room":"walk"}`)
	adm("POST", "/rooms", `{"room":"walk"}`)
	adm("GET", "/rooms/walk", "")
	adm("PUT", "/rooms/walk", `{"batch":3}`)
	adm("PUT", "/rooms/walk", `{"batch":"x"}`)
	adm("POST", "/rooms/walk/preview", `{"batch":4}`)
	adm("POST", "/rooms/walk/pause", "")
	adm("POST", "/rooms/walk/resume", "")
	adm("PUT", "/rooms/walk/message", `{"text":"soon"}`)
	adm("DELETE", "/rooms/walk/message", "")
	adm("POST", "/rooms/walk/invites", `{"count":2}`)
	adm("POST", "/visitors", `{"id":"user-42"}`)
	adm("GET", "/audit", "")
	adm("GET", "/settings", "")
	adm("DELETE", "/rooms/walk/sessions/nobody", "")
	v.do("GET", "/api/v1/rooms/walk/status", "")
	v.do("POST", "/api/v1/rooms/BAD/join", "")
	v.do("POST", "/api/v1/rooms/walk/join", "[1]")
	for _, want := range []string{"join 200", "status 200", "consumeToken 200", "consumeToken 409", "consumeToken 401", "consumeToken 400",
		"verifyToken 200", "order 401", "jwks 200", "leave 204", "adminRooms 200", "adminRooms 401", "ticket 200",
		"adminCreateRoom 201", "adminCreateRoom 409", "adminPutRoom 200", "adminPutRoom 400", "adminInvites 201", "join 400", "adminSettings 200"} {
		if !ct.seen[want] {
			t.Errorf("the walk did not see %s", want)
		}
	}
	if t.Failed() {
		t.Logf("seen: %v", slices.Sorted(maps.Keys(ct.seen)))
	}
}
