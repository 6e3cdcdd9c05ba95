//go:build deploy

package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/waitroom/waitroom/deploy/deploytest"
)

// TestDeployGuideListsEveryVariable: docs/deploy.md's table has a row for
// each flag of the binary, under its WAITROOM_* name, and no row for a
// variable that sets nothing.
func TestDeployGuideListsEveryVariable(t *testing.T) {
	flags := deploytest.Flags(t, deploytest.Binary(t))
	b, err := os.ReadFile(filepath.Join(deploytest.RepoRoot(t), "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(WAITROOM_[A-Z0-9_]+)` \\| `-([a-z0-9-]+)` \\|").FindAllSubmatch(b, -1) {
		rows[string(m[1])] = string(m[2])
	}
	for flag, env := range flags {
		if rows[env] != flag {
			t.Errorf("docs/deploy.md has no row for %s (-%s)", env, flag)
		}
	}
	for env, flag := range rows {
		if flags[flag] != env {
			t.Errorf("docs/deploy.md lists %s (-%s), which the binary does not have", env, flag)
		}
	}
}
