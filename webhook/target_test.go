package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

func TestAllowed(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "0.1.2.3", "::",
		"169.254.169.254", "169.254.0.1", "fe80::1", "fe80::1%eth0",
		"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "fc00::1", "fd12:3456::1",
		"100.64.0.1", "100.127.255.254", "192.0.0.170", "198.18.0.1", "240.0.0.1", "255.255.255.255",
		"224.0.0.1", "ff02::1", "ff05::2",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::127.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:7f00:1::1", "2001::1", "fec0::1",
	}
	allowed := []string{"93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450::1", "64:ff9b::808:808", "::ffff:8.8.8.8"}
	for _, s := range refused {
		if Allowed(netip.MustParseAddr(s), nil) {
			t.Errorf("%s allowed", s)
		}
	}
	for _, s := range allowed {
		if !Allowed(netip.MustParseAddr(s), nil) {
			t.Errorf("%s refused", s)
		}
	}
	if Allowed(netip.Addr{}, nil) {
		t.Error("the zero address allowed")
	}
	// The allow list lets its networks through, and only those.
	allow, err := ParseAllowList(" 127.0.0.0/8, ::1 ,10.1.2.0/24,::ffff:192.168.7.0/120")
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"127.0.0.1": true, "::ffff:127.0.0.1": true, "::1": true, "10.1.2.3": true, "192.168.7.9": true,
		"10.1.3.1": false, "169.254.169.254": false, "0.0.0.0": false, "192.168.8.1": false, "8.8.8.8": true,
	} {
		if got := Allowed(netip.MustParseAddr(s), allow); got != want {
			t.Errorf("with the allow list, %s: %v, want %v", s, got, want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "localhost", "1.2.3"} {
		if _, err := ParseAllowList(bad); err == nil {
			t.Errorf("allow list %q parsed", bad)
		}
	}
}

// The check the dialer makes refuses before connecting, by the address
// alone: nothing is sent to any of these.
func TestControlRefusesInternal(t *testing.T) {
	for _, addr := range []string{"169.254.169.254:80", "10.0.0.1:6379", "[fe80::1%eth0]:80", "[::ffff:127.0.0.1]:6379", "0.0.0.0:22", "100.64.1.1:443", "not-an-address"} {
		if err := AllowList(nil).control("tcp4", addr, nil); !errors.Is(err, ErrTargetNotAllowed) {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := AllowList(nil).control("tcp4", "93.184.216.34:443", nil); err != nil {
		t.Errorf("a public address refused: %v", err)
	}
}

func TestLiteralAddr(t *testing.T) {
	for host, want := range map[string]string{
		"2130706433": "127.0.0.1", "127.1": "127.0.0.1", "0x7f.1": "127.0.0.1", "0177.0.0.1": "127.0.0.1",
		"0x7f000001": "127.0.0.1", "127.0.1": "127.0.0.1", "0": "0.0.0.0", "169.254.43518": "169.254.169.254",
		"2852039166": "169.254.169.254", "::1": "::1", "::ffff:127.0.0.1": "::ffff:127.0.0.1", "10.0.0.1": "10.0.0.1",
	} {
		a, ok := literalAddr(host)
		if !ok || a != netip.MustParseAddr(want) {
			t.Errorf("%s: %v %v, want %s", host, a, ok, want)
		}
	}
	for _, host := range []string{"example.com", "hooks.example", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "4294967296", "0x", "08", "1_000", "+1", ""} {
		if a, ok := literalAddr(host); ok {
			t.Errorf("%s read as %v", host, a)
		}
	}
}

// An endpoint whose URL names an internal address, in any spelling, is
// refused when it is set (with a stable code) unless the allow list has
// it; a name is left to the dialer.
func TestSetRoomEndpointsRefusesInternal(t *testing.T) {
	h := newHooks(t, nil, nil, nil)
	sec := NewSecret()
	for _, u := range []string{
		"http://127.0.0.1:6379/", "http://[::1]/", "http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/",
		"http://0.0.0.0:8080/", "http://[::ffff:127.0.0.1]/", "http://2130706433/", "http://127.1/", "http://0x7f.1/",
		"http://10.0.0.1/", "http://172.16.3.4/", "http://192.168.0.1/", "http://[fd00::1]/", "http://100.64.0.1/",
	} {
		var ie *InvalidError
		err := h.SetRoomEndpoints(context.Background(), "drop", []Endpoint{{URL: u, Secret: sec}})
		if !errors.As(err, &ie) || ie.Code != "webhook_target_not_allowed" {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := New(nil, []Endpoint{{URL: "http://169.254.169.254/", Secret: sec}}, nil); err == nil {
		t.Error("a deployment endpoint at the metadata address was taken")
	}
	allowed := newHooks(t, nil, []Endpoint{{URL: "http://127.0.0.1:9/", Secret: sec}}, &Options{Allow: loopback})
	var ie *InvalidError
	if err := allowed.SetRoomEndpoints(context.Background(), "drop", []Endpoint{{URL: "http://169.254.169.254/", Secret: sec}}); !errors.As(err, &ie) || ie.Code != "webhook_target_not_allowed" {
		t.Errorf("the metadata address with loopback allowed: %v", err)
	}
}

// A receiver on loopback, named so that only the dialer sees where it is,
// is never called when loopback is not allowed; its delivery is dead with
// the same error as one to a port where nothing listens.
func TestInternalReceiverRefused(t *testing.T) {
	var calls atomic.Int64
	open := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	t.Cleanup(open.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	openPort := open.Listener.Addr().(*net.TCPAddr).Port
	srv := redistest.StartMini(t)
	r := newRedis(t, srv, "go-redis")
	o := fast()
	o.Allow = nil
	h := newHooks(t, r, nil, o)
	ctx := context.Background()
	eps := []Endpoint{
		{URL: "http://localhost:" + strconv.Itoa(openPort) + "/hook", Secret: NewSecret()},
		{URL: "http://localhost:" + strconv.Itoa(closedPort) + "/hook", Secret: NewSecret()},
	}
	if err := h.SetRoomEndpoints(ctx, "drop", eps); err != nil {
		t.Fatal(err)
	}
	if err := h.Emit(ctx, "drop", RoomPaused, nil); err != nil {
		t.Fatal(err)
	}
	run(t, h)
	var dead []Dead
	waitfor.Until(t, 10*time.Second, "both deliveries dead", func() bool {
		dead, _ = h.Dead(ctx, 10)
		return len(dead) == 2
	})
	for _, d := range dead {
		if d.LastError != "target address not allowed" || d.LastStatus != 0 || d.Attempts != 1 {
			t.Errorf("dead %+v", d)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the internal receiver was called %d times", n)
	}
}
