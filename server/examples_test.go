package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/gateway"
	"github.com/waitroom/waitroom/roomsfile"
)

// readmeCommand returns the flags of the first `go run ./server` command
// in the sh block after marker in README.md, with the paths it names
// (examples/...) made relative to this package.
func readmeCommand(t *testing.T, marker string) []string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), marker)
	if !ok {
		t.Fatalf("README.md has no %q", marker)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("README.md: no sh block after %q", marker)
	}
	block, _, _ := strings.Cut(rest, "```")
	words := strings.Fields(strings.ReplaceAll(block, "\\\n", " "))
	if len(words) < 3 || strings.Join(words[:3], " ") != "go run ./server" {
		t.Fatalf("README.md: the block after %q is not a go run ./server command: %q", marker, block)
	}
	args := words[3:]
	for i, a := range args {
		if strings.HasPrefix(a, "examples/") {
			args[i] = filepath.Join("..", a)
		}
	}
	return args
}

// TestExamplesFitTogether: the README's command for waitroom beside nginx
// starts on the example files as they are (every room examples/routes.yaml
// names is declared in examples/rooms.yaml), and the example routes serve a
// request to 127.0.0.1, the address that command listens on, instead of
// refusing its host (421): /checkout/ waits in the room drop, / passes.
func TestExamplesFitTogether(t *testing.T) {
	args := readmeCommand(t, "**Already run nginx?**")
	cfg, err := parseConfig(args, func(string) string { return "" })
	if err != nil {
		t.Fatalf("README command %q: %v", args, err)
	}
	if cfg.OpenRooms || cfg.RoomsFile == "" || cfg.RoutesFile == "" {
		t.Fatalf("README command %q: want -rooms and -routes, no -open-rooms", args)
	}

	// Every room a route names is declared in the rooms file.
	routesData, err := os.ReadFile(cfg.RoutesFile)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := gateway.Parse(cfg.RoutesFile, routesData)
	if err != nil {
		t.Fatal(err)
	}
	rooms, err := roomsfile.Load(cfg.RoomsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range routes.Routes {
		if _, ok := rooms.Room(rt.Room); !ok {
			t.Errorf("%s: route %s names room %q, which %s does not declare", cfg.RoutesFile, rt.Match, rt.Room, cfg.RoomsFile)
		}
	}

	ts := startServer(t, nil, "rueidis", func(c *config) {
		c.OpenRooms = false
		c.RoomsFile, c.RoutesFile, c.TrustedProxies = cfg.RoomsFile, cfg.RoutesFile, cfg.TrustedProxies
	})
	// What run checks before it listens.
	if err := ts.routesNameRooms(context.Background()); err != nil {
		t.Fatalf("start-up with the README's flags: %v", err)
	}

	// nginx's check of a request to itself on this machine, as
	// examples/nginx.conf makes it (Host $http_host, X-Original-URI).
	for _, host := range []string{"127.0.0.1:8000", "localhost:8000"} {
		resp, body := checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{
			"Host": host, "X-Original-URI": "/checkout/pay", "X-Original-Method": "GET",
		})
		if resp.StatusCode != 401 {
			t.Errorf("check of %s/checkout/pay: %d %s, want 401 (no session)", host, resp.StatusCode, body)
		}
		// nginx's second call (@waitroom), from an API client: the room's
		// state.
		resp, body = checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{
			"X-Forwarded-Host": host, "X-Forwarded-Uri": "/checkout/pay", "X-Forwarded-Method": "GET", "Accept": "application/json",
		})
		if resp.StatusCode != 429 || !strings.Contains(body, `"room":"drop"`) {
			t.Errorf("second check of %s/checkout/pay: %d %s, want 429 with the room drop's state", host, resp.StatusCode, body)
		}
		resp, body = checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{
			"Host": host, "X-Original-URI": "/", "X-Original-Method": "GET",
		})
		if resp.StatusCode != 200 {
			t.Errorf("check of %s/: %d %s, want 200 (no route guards it)", host, resp.StatusCode, body)
		}
	}
	// The production host keeps its routes; a host nobody named is still
	// refused.
	if resp, body := checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{
		"Host": "shop.example.com", "X-Original-URI": "/checkout/pay", "X-Original-Method": "GET",
	}); resp.StatusCode != 401 {
		t.Errorf("check of shop.example.com/checkout/pay: %d %s, want 401", resp.StatusCode, body)
	}
	if resp, body := checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{
		"X-Forwarded-Host": "other.example.net", "X-Forwarded-Uri": "/", "X-Forwarded-Method": "GET",
	}); resp.StatusCode != 421 {
		t.Errorf("check of a host no route names: %d %s, want 421", resp.StatusCode, body)
	}
}
