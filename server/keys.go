package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/waitroom/waitroom/internal/issuer"
)

const keysUsage = `usage:
  waitroom keys generate [-alg EdDSA|ES256] [-kid ID] -out FILE
      write a new -signing-keys file (mode 0600) with one key, the active one
  waitroom keys rotate -in FILE [-alg EdDSA|ES256] [-kid ID] [-stage]
      add the next key to FILE; it becomes the active (signing) key and the
      others stay to verify the tokens they signed. With -stage it is only
      published: activate it once every instance runs with it
  waitroom keys activate -in FILE -kid ID
      make the key ID of FILE (with its private part) the active one

A new key's id is the start of its thumbprint unless -kid names it; -alg
defaults to EdDSA (rotate: the active key's). Rotation on several
instances: docs/entry-tokens.md#rotation.
`

// keysCommand runs "waitroom keys …" with args (after "keys"): it writes
// what it did to stdout and a refusal to stderr, and returns the exit
// code (2 for a usage error).
func keysCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, keysUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	fs := flag.NewFlagSet("waitroom keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	alg := fs.String("alg", "", "EdDSA (Ed25519) or ES256 (P-256)")
	kid := fs.String("kid", "", "the new key's id")
	out := fs.String("out", "", "the file to write (generate)")
	in := fs.String("in", "", "the key file to change (rotate, activate)")
	stage := fs.Bool("stage", false, "publish the new key without making it active (rotate)")
	err := fs.Parse(args[1:])
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err == nil {
		err = checkKeysFlags(args[0], fs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "waitroom keys: %v\n\n%s", err, keysUsage)
		return 2
	}
	msg, err := runKeys(args[0], *alg, *kid, *out, *in, *stage)
	if err != nil {
		fmt.Fprintln(stderr, "waitroom keys:", err)
		return 1
	}
	fmt.Fprintln(stdout, msg)
	return 0
}

// checkKeysFlags says what is wrong with the flags given to command: an
// unknown command, a flag it does not take, one it needs.
func checkKeysFlags(command string, fs *flag.FlagSet) error {
	takes := map[string]string{"generate": "alg kid out", "rotate": "alg kid in stage", "activate": "in kid"}
	needs := map[string]string{"generate": "out", "rotate": "in", "activate": "in kid"}
	if _, ok := takes[command]; !ok {
		return fmt.Errorf("unknown command %q (generate, rotate or activate)", command)
	}
	var err error
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		if !strings.Contains(" "+takes[command]+" ", " "+f.Name+" ") && err == nil {
			err = fmt.Errorf("%s does not take -%s", command, f.Name)
		}
	})
	for _, n := range strings.Fields(needs[command]) {
		if !set[n] && err == nil {
			err = fmt.Errorf("%s needs -%s", command, n)
		}
	}
	if a := fs.Lookup("alg").Value.String(); set["alg"] && a != "EdDSA" && a != "ES256" && err == nil {
		err = fmt.Errorf("-alg %q: EdDSA or ES256", a)
	}
	return err
}

// runKeys does command and says what it did.
func runKeys(command, alg, kid, out, in string, stage bool) (string, error) {
	switch command {
	case "generate":
		k, err := issuer.GenerateKeyFile(out, cmp.Or(alg, "EdDSA"), kid)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("wrote %s (mode 0600): active key %q (%s); start the server with -signing-keys %s", out, k.ID, k.Alg, out), nil
	case "rotate":
		k, was, err := issuer.RotateKeyFile(in, alg, kid, stage)
		switch {
		case err != nil:
			return "", err
		case stage:
			return fmt.Sprintf("added key %q (%s) to %s, published only; %q still signs. Once every instance runs with this file: waitroom keys activate -in %s -kid %s",
				k.ID, k.Alg, in, was.ID, in, k.ID), nil
		}
		return fmt.Sprintf("added key %q (%s) to %s, now the active key; %q and the others stay to verify their tokens", k.ID, k.Alg, in, was.ID), nil
	default: // activate
		was, err := issuer.ActivateKey(in, kid)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%q is the active key of %s (was %q)", kid, in, was), nil
	}
}
