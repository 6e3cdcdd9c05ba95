//go:build deploy

// The OpenAPI document (static/openapi.json) is held to what the released
// binary answers: every response of a walk through the visitor's, the
// service's, the admin's and the probes' operations is validated with
// kin-openapi. The walk lives in this module so that kin-openapi is no
// requirement of the main module; `make test-deploy` runs it
// (cd deploy && go test -tags deploy -run TestOpenAPIResponses .).
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/waitroom/waitroom/deploy/deploytest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

const (
	walkAdminKey   = "admin-key-0123456789abcdef"
	walkServiceKey = "service-key-0123456789"
	walkSecret     = "test-secret-0123456789abcdef"
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
	raw, err := os.ReadFile(filepath.Join(deploytest.RepoRoot(t), "static", "openapi.json"))
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

// walker is one browser-like client (its own cookie jar) whose every
// request goes through the checked transport.
type walker struct {
	t    *testing.T
	base string
	http *http.Client
	cred string // the visitor credential its join gave
}

// answer is a response's status and its JSON body.
type answer struct {
	code int
	body map[string]any
}

func (a answer) str(k string) string { s, _ := a.body[k].(string); return s }

func (w *walker) do(method, path, body string, hdr ...string) answer {
	w.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.base+path, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := w.http.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			w.t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
		}
	}
	return a
}

func (w *walker) status(room string) answer {
	w.t.Helper()
	return w.do("GET", "/api/v1/rooms/"+room+"/status", "")
}

// consume calls the consume endpoint with key (none when empty).
func (w *walker) consume(key, body string) {
	w.t.Helper()
	hdr := []string{"Content-Type", "application/json"}
	if key != "" {
		hdr = append(hdr, "Authorization", "Bearer "+key)
	}
	w.do("POST", "/api/v1/tokens/consume", body, hdr...)
}

// TestOpenAPIResponses walks the visitor's, the service's, the admin's and
// the probes' operations on the real binary (embedded Redis, rooms open to
// any join, the demo endpoint, an admin key and a service-keys file) and
// validates every answer against the document with kin-openapi.
func TestOpenAPIResponses(t *testing.T) {
	bin := deploytest.Binary(t)
	keys := filepath.Join(t.TempDir(), "service-keys.yaml")
	if err := os.WriteFile(keys, []byte("shop: "+walkServiceKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := deploytest.Start(t, bin, nil, "-addr", "127.0.0.1:0", "-redis-client", "rueidis", "-secret", walkSecret,
		"-shutdown-timeout", "5s", "-drain-window", "200ms", "-open-rooms", "-demo",
		"-admin-key", walkAdminKey, "-service-keys", keys)
	ct := newCheckedTransport(t)
	jar, _ := cookiejar.New(nil)
	v := &walker{t: t, base: "http://" + s.Addr, http: &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: ct}}
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", s.Log())
		}
	}()

	joined := v.do("POST", "/api/v1/rooms/drop/join", "")
	if joined.code != 200 {
		t.Fatalf("join: %d %v", joined.code, joined.body)
	}
	v.cred = joined.str("visitor")
	v.status("drop")
	v.do("POST", "/api/v1/rooms/drop/ticket", "")
	// The binary's admission loop lets the visitor in; its polls (each
	// checked too) wait for it.
	var st answer
	waitfor.Until(t, 10*time.Second, "admission", func() bool {
		st = v.status("drop")
		return st.str("status") == "admitted"
	})
	tok := st.str("token")
	body := fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, v.cred)
	v.do("POST", "/api/v1/tokens/verify", body) // 425 or, on a slow machine, 200
	v.do("POST", "/api/v1/tokens/verify", fmt.Sprintf(`{"token":%q}`, tok))
	v.consume(walkServiceKey, fmt.Sprintf(`{"token":%q}`, tok))
	v.do("POST", "/api/v1/rooms/drop/orders", "")
	v.do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer nope")
	v.consume("", body)
	v.consume(walkServiceKey, `{"token":"abc"}`)
	v.consume(walkServiceKey, `{}`)
	nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
	waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
	v.do("POST", "/api/v1/tokens/verify", body)
	v.consume(walkServiceKey, body)
	v.consume(walkServiceKey, body)
	v.do("DELETE", "/api/v1/rooms/drop/queue", "")
	for _, p := range []string{"/.well-known/jwks.json", "/healthz", "/readyz", "/api/v1/openapi.json", "/api/v1/rooms/drop/lottery", "/api/v1/rooms/drop/draw"} {
		v.do("GET", p, "")
	}
	for _, p := range []string{"/whoami", "/rooms", "/rooms/drop/stats", "/rooms/drop/audit"} {
		v.do("GET", "/api/v1/admin"+p, "", "Authorization", "Bearer "+walkAdminKey)
	}
	v.do("GET", "/api/v1/admin/rooms", "")
	adm := func(method, path, body string) {
		v.do(method, "/api/v1/admin"+path, body, "Authorization", "Bearer "+walkAdminKey, "Content-Type", "application/json")
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
