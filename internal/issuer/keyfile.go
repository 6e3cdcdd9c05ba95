package issuer

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
)

// shared is the permission bits a key file must not have: any for its
// group or others. A key file other accounts may read is a key leaked, and
// one they may write is a key they chose; the server refuses it, as ssh
// refuses such a private key.
const shared fs.FileMode = 0o077

// ReadKeyFile returns the contents of the key file at path (signing keys,
// service keys), or an error naming its mode when its group or others have
// any permission on it (mode & 0077). The mode checked is that of the file
// opened, so a file swapped in between is not read unchecked; a symbolic
// link (a Kubernetes Secret volume's) is followed. On Windows, whose files
// have no such bits, the mode is not checked.
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkKeyFileMode(path, st.Mode()); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// checkKeyFileMode is the check of ReadKeyFile on a file's mode.
func checkKeyFileMode(path string, mode fs.FileMode) error {
	if runtime.GOOS == "windows" || mode.Perm()&shared == 0 {
		return nil
	}
	return fmt.Errorf("%s is mode %04o: group or others may read or change it; chmod 600 %s", path, mode.Perm(), path)
}
