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
