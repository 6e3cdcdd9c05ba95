//go:build unix

package issuer

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of the file st describes, where
// this user may (root rotating a key file the server's user owns): a key
// file the server cannot read stops its next start. Otherwise f stays
// this user's.
func keepOwner(f *os.File, st fs.FileInfo) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(int(s.Uid), int(s.Gid))
	}
}
