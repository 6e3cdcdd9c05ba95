// Package docs holds waitroom's reference pages. It has no code: its test
// checks that every relative link in README.md, CHANGELOG.md and the pages
// here resolves to a file that exists, and that every #anchor names a
// heading of the page it points into, so a moved or renamed section breaks
// the build instead of a reader's click.
package docs

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// pages lists the Markdown files the links of which are checked, relative to
// the repository root. go test runs in the package's directory, docs/, so
// the root is its parent.
func pages(t *testing.T) (root string, files []string) {
	t.Helper()
	// A run from anywhere else would check nothing and pass: make sure the
	// working directory is this test's own.
	if _, err := os.Stat("links_test.go"); err != nil {
		t.Fatalf("the test must run in its own directory (docs/): %v", err)
	}
	root = ".."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in the parent of docs/: %v", err)
	}
	for _, pattern := range []string{"*.md", "docs/*.md", "docs/bench/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.ToSlash(rel))
		}
	}
	for _, want := range []string{"README.md", "docs/architecture.md", "docs/performance.md"} {
		if !slices.Contains(files, want) {
			t.Fatalf("%s not found among %v", want, files)
		}
	}
	return root, files
}

func TestLinksResolve(t *testing.T) {
	root, files := pages(t)
	problems, links := checkLinks(root, files)
	for _, p := range problems {
		t.Error(p)
	}
	// README.md alone links into every page of docs/; far fewer links than
	// that means the parser stopped finding them.
	if links < 100 {
		t.Errorf("found only %d relative links in %d files", links, len(files))
	}
}

// TestCheckLinksFindsBroken proves the checker fails on what it is for:
// a missing file, a missing heading in another file and in the same one,
// while links in code, external URLs and good anchors pass.
func TestCheckLinksFindsBroken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Top",
		"## Gateway mode",
		"## Gateway mode",
		"See [the API](sub/api.md#errors), [it again](sub/api.md), [a dup](#gateway-mode-1) and [here](#gateway-mode).",
		"An image: ![shot](sub/shot.png). A site: [x](https://example.com/nope.md), [mail](mailto:a@b.c).",
		"Broken: [gone](missing.md), [no heading](sub/api.md#nope), [no local](#nowhere), [dir](sub/).",
		"`[in code](nothere.md)` is code.",
		"```",
		"[in a fence](nothere.md)",
		"## Not a heading",
		"```",
		"[fenced heading](#not-a-heading)",
		`<a href="missing.html">html</a>`,
	}, "\n"))
	write("sub/api.md", "# API\n\n## Errors\n\nBack to [the top](../README.md#top) and [wrong](../README.md#bottom).\n")
	write("sub/shot.png", "png")

	problems, links := checkLinks(dir, []string{"README.md", "sub/api.md"})
	want := []string{
		`README.md:6: missing.md: no such file`,
		`README.md:6: sub/api.md#nope: no heading "nope" in sub/api.md`,
		`README.md:6: #nowhere: no heading "nowhere" in README.md`,
		`README.md:12: #not-a-heading: no heading "not-a-heading" in README.md`,
		`README.md:13: missing.html: no such file`,
		`sub/api.md:5: ../README.md#bottom: no heading "bottom" in README.md`,
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if links != 13 {
		t.Errorf("relative links: %d, want 13", links)
	}
}

func TestAnchor(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Gateway mode", "gateway-mode"},
		{"HTTP API (v1)", "http-api-v1"},
		{"Presence: who is still there", "presence-who-is-still-there"},
		{"45,000 push visitors over three instances", "45000-push-visitors-over-three-instances"},
		{"Sharded pub/sub on a Redis Cluster", "sharded-pubsub-on-a-redis-cluster"},
		{"Languages, branding and a page of your own", "languages-branding-and-a-page-of-your-own"},
		{"`/api/v1/check`", "apiv1check"},
		{"The lottery's log", "the-lotterys-log"},
		{"snake_case and kebab-case", "snake_case-and-kebab-case"},
		{"A [linked](https://example.com) word", "a-linked-word"},
		{"Ünïcode Größe", "ünïcode-größe"},
		{"Soak: ten minutes of faults", "soak-ten-minutes-of-faults"},
		{"two  spaces", "two--spaces"},
	} {
		if got := anchor(c.heading); got != c.want {
			t.Errorf("anchor(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

var (
	fenceRE   = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	codeRE    = regexp.MustCompile("`+[^`]*`+")
	// An inline link or image: [text](target "title"). The text may hold
	// one level of brackets (an image inside a link).
	linkRE = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	htmlRE = regexp.MustCompile(`(?i)<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*"([^"]*)"`)
	// A target with a scheme (https:, mailto:) or a network path is not
	// this repository's to check.
	externalRE = regexp.MustCompile(`^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)`)
)

// anchor is the id GitHub gives a heading: the rendered text in lower case,
// every character that is not a letter, a mark, a digit, '_', '-' or a
// space dropped, and each space turned into '-'.
func anchor(heading string) string {
	text := linkRE.ReplaceAllStringFunc(heading, func(m string) string {
		// Keep a link's text, drop its target.
		return m[strings.Index(m, "[")+1 : strings.LastIndex(m, "](")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// doc is one Markdown file's headings (as anchors) and relative links.
type doc struct {
	anchors map[string]bool
	links   []link
}

type link struct {
	line   int
	target string
}

// parse reads the headings and links of a Markdown file, leaving out what
// is inside fenced code blocks and code spans.
func parse(text string) doc {
	d := doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	var fence string
	for i, line := range strings.Split(text, "\n") {
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case fence == "":
				fence = m[1]
			case strings.HasPrefix(m[1], fence[:1]) && len(m[1]) >= len(fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			a := anchor(m[2])
			// GitHub numbers repeated headings: x, x-1, x-2.
			if n := seen[a]; n > 0 {
				seen[a]++
				a = fmt.Sprintf("%s-%d", a, n)
			} else {
				seen[a] = 1
			}
			d.anchors[a] = true
		}
		plain := codeRE.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{linkRE, htmlRE} {
			for _, m := range re.FindAllStringSubmatch(plain, -1) {
				if !externalRE.MatchString(m[1]) {
					d.links = append(d.links, link{line: i + 1, target: m[1]})
				}
			}
		}
	}
	return d
}

// checkLinks reads files (slash paths relative to root) and returns one
// line per link that does not resolve, and how many relative links it
// checked. A link to another Markdown file with a #fragment must name one
// of that file's headings; a fragment on any other file is not checked.
func checkLinks(root string, files []string) (problems []string, links int) {
	docs := map[string]doc{}
	load := func(name string) (doc, error) {
		if d, ok := docs[name]; ok {
			return d, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			return doc{}, err
		}
		d := parse(string(b))
		docs[name] = d
		return d, nil
	}
	for _, name := range files {
		d, err := load(name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, l := range d.links {
			links++
			bad := func(format string, args ...any) {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: ", name, l.line, l.target)+fmt.Sprintf(format, args...))
			}
			pathPart, frag, _ := strings.Cut(l.target, "#")
			pathPart, _, _ = strings.Cut(pathPart, "?")
			p, err := url.PathUnescape(pathPart)
			if err != nil {
				bad("bad escape: %v", err)
				continue
			}
			target := name
			if p != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(name), p)))
				if strings.HasPrefix(target, "../") || target == ".." {
					bad("points outside the repository")
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
					bad("no such file")
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			td, err := load(target)
			if err != nil {
				bad("%v", err)
				continue
			}
			if !td.anchors[strings.ToLower(frag)] {
				bad("no heading %q in %s", frag, target)
			}
		}
	}
	return problems, links
}
