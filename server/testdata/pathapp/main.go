// Command pathapp is a plain net/http app for the gateway tests: it routes
// on the path as net/http decodes it, cleaned, the way many Go apps do.
// /checkout/static/ is its static files, the rest of /checkout/ its
// checkout handler, which counts the requests that reached it without the
// gateway's visitor header (GET /__hits).
package main

import (
	"fmt"
	"net/http"
	"os"
	"path"
	"strings"
	"sync/atomic"
)

func main() {
	var hits atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean(r.URL.Path)
		switch {
		case p == "/__hits":
			fmt.Fprint(w, hits.Load())
		case strings.HasPrefix(p, "/checkout/static/"):
			fmt.Fprint(w, "static "+p)
		case p == "/checkout" || strings.HasPrefix(p, "/checkout/"):
			v := r.Header.Get("X-Waitroom-Visitor")
			if v == "" {
				hits.Add(1)
			}
			fmt.Fprintf(w, "checkout-handler %s visitor=%s", p, v)
		default:
			fmt.Fprint(w, "page "+p)
		}
	})
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
