package webhook

import (
	"errors"
	"testing"
	"time"
)

// The specification's own example: its reference libraries produce this
// signature for this secret, id, timestamp and body.
func TestSignSpecVector(t *testing.T) {
	got, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

func TestValidate(t *testing.T) {
	good := Endpoint{URL: "https://hooks.example.com/in?x=1", Secret: NewSecret(), Events: []string{RoomPaused}}
	for _, tc := range []struct {
		name string
		mod  func(*Endpoint)
		code string
	}{
		{"good", func(*Endpoint) {}, ""},
		{"all events", func(e *Endpoint) { e.Events = nil }, ""},
		{"http", func(e *Endpoint) { e.URL = "http://127.0.0.1:9/x" }, ""},
		{"ftp", func(e *Endpoint) { e.URL = "ftp://example.com/" }, "invalid_webhook_url"},
		{"relative", func(e *Endpoint) { e.URL = "/hooks" }, "invalid_webhook_url"},
		{"no host", func(e *Endpoint) { e.URL = "https:///x" }, "invalid_webhook_url"},
		{"user", func(e *Endpoint) { e.URL = "https://u:p@example.com/" }, "invalid_webhook_url"},
		{"garbage", func(e *Endpoint) { e.URL = "ht tp://x" }, "invalid_webhook_url"},
		{"unknown event", func(e *Endpoint) { e.Events = []string{"room.exploded"} }, "unknown_event"},
		{"no prefix", func(e *Endpoint) { e.Secret = e.Secret[6:] }, "invalid_webhook_secret"},
		{"short", func(e *Endpoint) { e.Secret = "whsec_c2hvcnQ=" }, "invalid_webhook_secret"},
		{"not base64", func(e *Endpoint) { e.Secret = "whsec_!!!!" }, "invalid_webhook_secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := good
			tc.mod(&e)
			err := e.Validate()
			var ie *InvalidError
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.code != "" && (!errors.As(err, &ie) || ie.Code != tc.code):
				t.Fatalf("got %v, want code %s", err, tc.code)
			}
		})
	}
}

func TestMaskSecret(t *testing.T) {
	s := NewSecret()
	if m := MaskSecret(s); m != s[:10]+"…" {
		t.Fatalf("masked %q", m)
	}
	if m := MaskSecret("short"); m != "*****" {
		t.Fatalf("masked %q", m)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.example.com/services/T0/B0/XXXX":   "https://hooks.example.com/…",
		"https://hooks.example.com:8443/in?token=abc":     "https://hooks.example.com:8443/…",
		"https://hooks.example.com/?token=abc":            "https://hooks.example.com/…",
		"https://hooks.example.com?":                      "https://hooks.example.com/…",
		"https://hooks.example.com":                       "https://hooks.example.com/",
		"https://hooks.example.com/":                      "https://hooks.example.com/",
		"http://[2001:db8::1]:80/a%2Fb":                   "http://[2001:db8::1]:80/…",
		"not a url":                                       "…",
		"mailto:someone@example.com?subject=secret-thing": "…",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
