// Package static holds the waiting-room page and the JS client, embedded in
// the binary so the server needs no files beside it.
package static

import "embed"

// Files holds index.html (the waiting-room page) and waitroom.js (the client
// other sites can include).
//
//go:embed index.html waitroom.js
var Files embed.FS
