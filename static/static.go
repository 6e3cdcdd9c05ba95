// Package static holds the waiting-room page, the JS client and the admin
// dashboard, embedded in the binary so the server needs no files beside it.
package static

import "embed"

// Files holds index.html (the waiting-room page), admin.html (the
// dashboard), waitroom.js (the client other sites can include) and the
// pages' own scripts, style sheet and icon, served under /assets/.
//
//go:embed *.html *.js *.css *.svg
var Files embed.FS
