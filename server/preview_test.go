package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestAdminPreviewPage: every role may preview a room's page in each
// state, which comes with the room's message and the made-up state in the
// boot data, under a sandboxing policy; bad input is a JSON error; and
// not one key is written to Redis.
func TestAdminPreviewPage(t *testing.T) {
	ts := rolesServer(t)
	v := newVisitor(t, ts.URL)
	if r := v.admin("POST", "/rooms", `{"room":"drop","message":"Back at ten."}`); r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Raw)
	}
	rdb := redis.NewClient(&redis.Options{Addr: ts.srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	keys := func() []string {
		t.Helper()
		k, err := rdb.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(k)
		return k
	}
	before := keys()

	for _, key := range []string{testAdminKey, opsKey, viewerKey} {
		for _, state := range []string{"waiting", "paused", "prequeue", "soldout", "admitted", "closed"} {
			code, hdr, page := getPage(t, ts.URL+"/admin/preview?room=drop&lang=de&state="+state, key)
			if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
				t.Fatalf("%s: %d %s", state, code, page)
			}
			if !strings.Contains(page, `<html lang="de"`) || !strings.Contains(page, `"preview":{"type":"state","room":"drop"`) ||
				!strings.Contains(page, "Back at ten.") {
				t.Fatalf("%s: not the room's page with a preview: %s", state, page)
			}
			if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") {
				t.Fatalf("%s: policy %q", state, csp)
			}
		}
	}
	for q, code := range map[string]string{
		"room=drop&state=gone": "invalid_state", "room=drop&lang=tlh": "invalid_lang", "room=DROP": "invalid_room",
	} {
		if r := v.do("GET", "/admin/preview?"+q, "", "Authorization", "Bearer "+viewerKey); r.Code != 400 || r.errCode() != code {
			t.Errorf("%s: %d %s, want 400 %s", q, r.Code, r.Raw, code)
		}
	}
	if r := v.do("GET", "/admin/preview?room=other", "", "Authorization", "Bearer "+viewerKey); r.Code != 404 || r.errCode() != "room_not_found" {
		t.Errorf("a room nobody made: %d %s", r.Code, r.Raw)
	}
	if r := v.do("GET", "/admin/preview?room=drop", ""); r.Code != 401 || r.errCode() != "invalid_admin_key" {
		t.Errorf("no key: %d %s", r.Code, r.Raw)
	}
	if after := keys(); !slices.Equal(after, before) {
		t.Fatalf("keys before %v, after %v", before, after)
	}
}

// getPage GETs url with the admin key and returns the status, the headers
// and the body.
func getPage(t *testing.T, url, key string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}
