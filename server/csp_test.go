package main

import (
	"strings"
	"testing"
)

func TestPageAndAdminHeaders(t *testing.T) {
	ts := startServer(t, nil, "rueidis", nil)
	for _, tc := range []struct{ path, csp, xfo string }{
		{"/admin", "frame-ancestors 'none'", "DENY"},
		{"/?room=demo", "frame-ancestors 'self'", "SAMEORIGIN"},
	} {
		resp, err := noKeepAlive.Get(ts.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, tc.csp) || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != tc.xfo {
			t.Errorf("%s: X-Frame-Options %q, want %q", tc.path, got, tc.xfo)
		}
	}

	shop := startServer(t, nil, "rueidis", func(c *config) { c.FrameAncestors = "'self' https://shop.example.com" })
	resp, err := noKeepAlive.Get(shop.URL + "/?room=demo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors 'self' https://shop.example.com") {
		t.Errorf("embedding shop: CSP %q", csp)
	}
	if got := resp.Header.Get("X-Frame-Options"); got != "" {
		t.Errorf("embedding shop: X-Frame-Options %q would refuse the shop's frame", got)
	}
}

func TestFrameAncestorsFlag(t *testing.T) {
	for _, v := range []string{"'none'", "'self'", "https://a.example 'self'", "http://localhost:3000"} {
		if _, err := parseConfig([]string{"-frame-ancestors", v}, func(string) string { return "" }); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"", "*", "'none' 'self'", "https://a.example; script-src *", "javascript:x", "'unsafe-inline'"} {
		if _, err := parseConfig([]string{"-frame-ancestors", v}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "-frame-ancestors") {
			t.Errorf("%q: %v, want an error naming the flag", v, err)
		}
	}
}
