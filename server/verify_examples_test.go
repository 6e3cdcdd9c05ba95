package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/testlane"
)

// TestVerifyExamples runs examples/verify/{go,python,node}, each as its own
// process with a stock JWT library (golang-jwt, PyJWT, jose) that fetches
// the server's JWKS over HTTP: the server's token passes, and a tampered
// one, one for another room and one signed by an unpublished key are
// refused.
func TestVerifyExamples(t *testing.T) {
	programs := verifyPrograms(t)
	for _, alg := range []string{entry.EdDSA, entry.ES256} {
		t.Run(alg, func(t *testing.T) {
			var mut func(*config)
			if alg == entry.ES256 {
				k, _ := entry.GenerateKey(entry.ES256, "p256")
				path := keyFile(t, "p256", k)
				mut = func(c *config) { c.Entry.KeysFile = path }
			}
			verifyWith(t, startServer(t, nil, "rueidis", mut), programs)
		})
	}
}

// verifyWith runs each program on a good token of ts and on three bad
// ones.
func verifyWith(t *testing.T, ts *testServer, programs map[string][]string) {
	_, good := admittedToken(t, ts, "drop")
	_, otherRoom := admittedToken(t, ts, "shoe")
	tk, err := ts.parseToken(good)
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := entry.GenerateKey(entry.EdDSA, ts.tokens.Keys().Active().ID+"-x")
	strangerSet, _ := entry.NewKeySet(stranger.ID, stranger)
	unpublished, _ := strangerSet.Sign(entry.Claims{Issuer: ts.tokens.Issuer(), Room: "drop", Visitor: tk.Visitor,
		NotBefore: tk.NotBefore, ExpiresAt: tk.NotBefore.Add(ts.cfg.TokenMax)})
	tokens := map[string]string{
		"good":        good,
		"tampered":    forgeClaim(t, good, `"sub":"`+tk.Visitor+`"`, `"sub":"someone-else"`),
		"other room":  otherRoom,
		"unpublished": unpublished,
	}
	jwks := ts.URL + "/.well-known/jwks.json"
	for lang, argv := range programs {
		for name, tok := range tokens {
			t.Run(lang+"/"+name, func(t *testing.T) {
				cmd := exec.Command(argv[0], append(argv[1:], jwks, ts.tokens.Issuer(), "drop", tok)...)
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				if name == "good" {
					if err != nil || !strings.Contains(stdout.String(), `"aud":"drop"`) || !strings.Contains(stdout.String(), tk.Visitor) {
						t.Fatalf("refused the server's token: %v\n%s%s", err, stdout.String(), stderr.String())
					}
					return
				}
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "refused") {
					t.Fatalf("%s token: %v\n%s%s", name, err, stdout.String(), stderr.String())
				}
			})
		}
	}
}

// verifyPrograms builds the Go example and finds the Python and Node ones
// with their libraries: the command line of each, before its arguments.
func verifyPrograms(t *testing.T) map[string][]string {
	testlane.Need(t, "go, python3 and node")
	root, _ := filepath.Abs("..")
	dir := filepath.Join(root, "examples", "verify")
	goBin := filepath.Join(t.TempDir(), "verify-go")
	build := exec.Command("go", "build", "-o", goBin, ".")
	build.Dir = filepath.Join(dir, "go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/verify/go: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "node", "node_modules", "jose")); err != nil {
		t.Fatalf("examples/verify/node has no jose (make deps-verify installs it): %v", err)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import jwt, cryptography").Run(); err != nil {
		t.Fatalf("Debian's python3-jwt and python3-cryptography are missing (make deps-verify installs them): %v", err)
	}
	return map[string][]string{
		"go":     {goBin},
		"python": {"/usr/bin/python3", filepath.Join(dir, "python", "verify.py")},
		"node":   {"node", filepath.Join(dir, "node", "verify.mjs")},
	}
}
