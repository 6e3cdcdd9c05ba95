package entry_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/waitroom/waitroom/entry"
)

// A shop's service protects its checkout with the waitroom server's keys.
// Here a key set stands in for the server: it publishes the JWKS and signs
// a visitor's token. The token passes only with the visitor credential it
// was issued to, which the waitroom page keeps in the wr_visitor cookie.
func ExampleVerifier_Middleware() {
	key, _ := entry.GenerateKey(entry.EdDSA, "2026-12")
	keys, _ := entry.NewKeySet("2026-12", key)
	waitroom := httptest.NewServer(entry.JWKSHandler(keys, 5*time.Minute))
	defer waitroom.Close()

	v, err := entry.NewVerifier(waitroom.URL+"/.well-known/jwks.json", &entry.VerifierOptions{
		Issuer: "https://queue.example.com",
		Rooms:  []string{"drop"},
	})
	if err != nil {
		panic(err)
	}
	checkout := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := entry.FromContext(r.Context())
		fmt.Fprintf(w, "order for %s in %s", c.Visitor, c.Room)
	})
	// With Consumer: entry.NewConsumer("https://queue.example.com", serviceKey, nil),
	// each token also passes only once.
	shop := httptest.NewServer(v.Middleware(checkout, nil))
	defer shop.Close()

	now := time.Now()
	tok, _ := keys.Sign(entry.Claims{Issuer: "https://queue.example.com", Room: "drop", Visitor: "v-42",
		NotBefore: now.Add(-time.Second), ExpiresAt: now.Add(15 * time.Minute)})
	for _, r := range []struct{ token, visitor string }{
		{tok, "v-42.signature"},
		{tok, ""},
		{"forged", "v-42.signature"},
	} {
		req, _ := http.NewRequest("POST", shop.URL+"/checkout", nil)
		req.Header.Set("Authorization", "Bearer "+r.token)
		if r.visitor != "" {
			req.Header.Set("X-Visitor", r.visitor)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	// Output:
	// 200 order for v-42 in drop
	// 401 {"error":{"code":"missing_visitor","message":"the entry token must come with the visitor credential it was issued to (cookie wr_visitor or X-Visitor)"}}
	// 401 {"error":{"code":"invalid_token","message":"invalid entry token: not a compact JWS"}}
}
