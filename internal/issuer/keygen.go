package issuer

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/waitroom/waitroom/entry"
)

// GenerateKeyFile writes a new -signing-keys file at path, which must not
// exist, mode 0600, with one new key of alg (entry.EdDSA or entry.ES256)
// named kid (empty: the start of its thumbprint), active.
func GenerateKeyFile(path, alg, kid string) (*entry.Key, error) {
	k, err := entry.GenerateKey(alg, kid)
	if err != nil {
		return nil, err
	}
	ks, err := entry.NewKeySet(k.ID, k)
	if err != nil {
		return nil, err
	}
	data, err := ks.MarshalKeyFile()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s exists: a key file is never overwritten (rotate adds a key to it)", path)
	}
	if err != nil {
		return nil, err
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return k, nil
}

// RotateKeyFile adds a new key to the -signing-keys file at path, named
// kid (empty: the start of its thumbprint), of alg (empty: that of the
// active key). It becomes the active key unless stage, which only
// publishes it (the first step of a rotation on several instances). Every
// key of the file stays, with its private part. It returns the new key and
// the key that was active.
func RotateKeyFile(path, alg, kid string, stage bool) (added, was *entry.Key, err error) {
	ks, err := readKeySet(path)
	if err != nil {
		return nil, nil, err
	}
	k, err := entry.GenerateKey(cmp.Or(alg, ks.Active().Alg), kid)
	if err != nil {
		return nil, nil, err
	}
	active := k.ID
	if stage {
		active = ks.Active().ID
	}
	next, err := entry.NewKeySet(active, append(ks.Keys(), k)...)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := replaceKeyFile(path, next); err != nil {
		return nil, nil, err
	}
	return k, ks.Active(), nil
}

// ActivateKey makes the key kid of the -signing-keys file at path, which
// must have its private part, the active one (the second step of a
// rotation on several instances). It returns the id of the key that was
// active; the file is left as it was when that is kid.
func ActivateKey(path, kid string) (was string, err error) {
	ks, err := readKeySet(path)
	if err != nil {
		return "", err
	}
	if ks.Active().ID == kid {
		return kid, nil
	}
	next, err := entry.NewKeySet(kid, ks.Keys()...)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return ks.Active().ID, replaceKeyFile(path, next)
}

// readKeySet reads a key file as the server does: only its owner's.
func readKeySet(path string) (*entry.KeySet, error) {
	data, err := ReadKeyFile(path)
	if err != nil {
		return nil, err
	}
	ks, err := entry.ParseKeySet(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ks, nil
}

// replaceKeyFile writes ks over the key file at path in one step (a new
// file renamed over it), with the old file's permissions and, where this
// user may, its owner: a server reading it meanwhile reads the old set or
// the new, never half of one.
func replaceKeyFile(path string, ks *entry.KeySet) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	data, err := ks.MarshalKeyFile()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing there
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Chmod(st.Mode().Perm())
	}
	if err == nil {
		keepOwner(tmp, st)
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
