package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/settings"
)

// openAPIDoc is what the tests read of static/openapi.json.
type openAPIDoc struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

// anyMethod marks a path item whose handler takes every method.
const anyMethod = "x-waitroom-any-method"

// TestOpenAPIMatchesRoutes holds the served OpenAPI document to the
// server's routes: every route is a documented operation and every
// operation a route.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	ts := startServer(t, nil, "rueidis", func(c *config) { c.Demo = true }) // the demo route is documented
	resp, err := http.Get(ts.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc openAPIDoc
	if resp.StatusCode != 200 || json.Unmarshal(raw, &doc) != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi.json: %d, openapi %q", resp.StatusCode, doc.OpenAPI)
	}
	param := regexp.MustCompile(`:([a-z]+)`)
	routes := map[string]bool{}
	for _, r := range ts.app.GetRoutes(true) {
		path := param.ReplaceAllString(r.Path, "{$1}")
		path = strings.Replace(path, "*", "{path}", 1)
		if path != "/" {
			path = strings.TrimSuffix(path, "/")
		}
		item, ok := doc.Paths[path]
		if !ok {
			t.Errorf("route %s %s is not in the document", r.Method, path)
			continue
		}
		m := strings.ToLower(r.Method)
		routes[m+" "+path] = true
		if _, any := item[anyMethod]; any {
			continue
		}
		if _, ok := item[m]; !ok && m != "head" { // fiber adds HEAD to every GET
			t.Errorf("route %s %s is not documented", r.Method, path)
		}
	}
	for path, item := range doc.Paths {
		for m := range item {
			if !strings.HasPrefix(m, "x-") && !routes[m+" "+path] {
				t.Errorf("documented %s %s is no route", strings.ToUpper(m), path)
			}
		}
	}
}

// TestOpenAPIErrorCodes holds the document's error codes to the code's:
// every code it names is one the server answers, and every code the server
// answers through httperr is named.
func TestOpenAPIErrorCodes(t *testing.T) {
	raw, err := os.ReadFile("../static/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9_]+)`").FindAllStringSubmatch(string(raw), -1) {
		documented[m[1]] = true
	}
	answered := map[string]bool{}
	var src strings.Builder
	newErr := regexp.MustCompile(`httperr\.New\(\d+, "([a-z0-9_]+)"`)
	for _, dir := range []string{".", "../visit", "../admin", "../schedule", "../demo", "../gateway", "../push", "../internal/httperr"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
			for _, m := range newErr.FindAllStringSubmatch(string(b), -1) {
				answered[m[1]] = true
			}
		}
	}
	for c := range documented {
		if !strings.Contains(src.String(), `"`+c+`"`) {
			t.Errorf("the document names %s, which no handler answers", c)
		}
	}
	var missing []string
	for c := range answered {
		if !documented[c] {
			missing = append(missing, c)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("codes the server answers that the document does not name: %v", missing)
	}
}

// TestOpenAPICheckFlow holds the document's account of an API client at
// the check to the server's answers in a room with activation busy: the
// pass names every header it hands an API client, and the 429 every header
// it sends, with a body whose every field the document describes
// (CheckQueued: the State, the credential, the links, the activation).
func TestOpenAPICheckFlow(t *testing.T) {
	raw, err := os.ReadFile("../static/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]schemaDoc `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var get struct {
		Responses map[string]struct {
			Headers map[string]json.RawMessage `json:"headers"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(doc.Paths["/api/v1/check"]["get"], &get); err != nil {
		t.Fatal(err)
	}
	documented := func(code string) []string {
		var names []string
		for h := range get.Responses[code].Headers {
			names = append(names, h)
		}
		if len(names) == 0 {
			t.Fatalf("no headers documented for the check's %s", code)
		}
		return names
	}
	fields := map[string]schemaDoc{}
	for _, part := range doc.Components.Schemas["CheckQueued"].AllOf {
		s := part
		if s.Ref != "" {
			s = doc.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
		}
		for k, v := range s.Properties {
			fields[k] = v
		}
	}

	ts := startServer(t, nil, "rueidis", func(c *config) {
		c.Routes = []string{"{match: 'shop.example.com/checkout/*', room: gw}"}
		c.TrustedProxies, _ = limit.ParseProxies("127.0.0.1/32")
	})
	setRoom(t, ts, "gw", settings.Room{Strategy: "max-active", MaxActive: 1, Activation: settings.ActivationBusy})
	check := func() (*http.Response, string) {
		return checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{"X-Forwarded-Host": "shop.example.com",
			"X-Forwarded-Uri": "/checkout/api", "X-Forwarded-Method": "GET", "Accept": "application/json"})
	}
	resp, _ := check()
	if resp.StatusCode != 200 {
		t.Fatalf("the first API client: %d, want a pass", resp.StatusCode)
	}
	for _, h := range documented("200") {
		if h == "X-Waitroom-Visitor-Cookie" {
			continue // nginx's alone (X-Original-URI)
		}
		if resp.Header.Get(h) == "" {
			t.Errorf("the pass lacks the documented %s", h)
		}
	}
	resp, body := check()
	if resp.StatusCode != 429 {
		t.Fatalf("the second API client: %d %s, want 429", resp.StatusCode, body)
	}
	for _, h := range documented("429") {
		if resp.Header.Get(h) == "" {
			t.Errorf("the 429 lacks the documented %s", h)
		}
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"visitor", "links", "activation"} {
		if got[k] == nil {
			t.Errorf("the 429's body lacks %q: %s", k, body)
		}
	}
	for k, v := range got {
		s, ok := fields[k]
		if !ok {
			t.Errorf("the 429's body has %q, which CheckQueued does not describe", k)
			continue
		}
		if len(s.Properties) == 0 {
			continue
		}
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(v, &inner); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		for ik := range inner {
			if _, ok := s.Properties[ik]; !ok {
				t.Errorf("the 429's %s has %q, which the document does not describe", k, ik)
			}
		}
		for _, r := range s.Required {
			if inner[r] == nil {
				t.Errorf("the 429's %s lacks the required %q", k, r)
			}
		}
	}
}

// schemaDoc is what TestOpenAPICheckFlow reads of a schema.
type schemaDoc struct {
	Ref        string               `json:"$ref"`
	AllOf      []schemaDoc          `json:"allOf"`
	Properties map[string]schemaDoc `json:"properties"`
	Required   []string             `json:"required"`
}
