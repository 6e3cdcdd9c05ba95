package queue

import (
	"regexp"
	"strings"
)

// prune returns the prelude without the functions that body does not
// reach, directly or through other functions of the prelude. Redis runs a
// script's whole chunk on every call, so each function defined is a
// closure made (and collected) per call: a few hundred nanoseconds of the
// room's one Redis core each, for nothing when the script never calls it.
//
// The prelude's files keep to one layout, which this relies on: a function
// starts with "local function name(" at the start of a line and ends on
// that line when it ends with " end", else at the next line that is
// exactly "end" (the functions' bodies are indented). A one-line
// "local NAME = value" (a constant, or a table the functions share) that
// calls nothing is pruned the same way: a table constructed on every call is an allocation
// for nothing where no function kept uses it. Everything else at the top
// level (comments, statements, a value over several lines) is kept as it
// is, and what it names is kept too. A name that only appears in a string
// keeps its function: pruning errs on keeping (names in comments are not
// looked at).
func prune(prelude, body string) string {
	type fn struct {
		name, text string
		keep       bool
	}
	var parts []*fn // name "" is text kept as it is
	lines := strings.SplitAfter(prelude, "\n")
	work := []string{body} // text whose names are kept
	for i := 0; i < len(lines); i++ {
		name, ok := strings.CutPrefix(lines[i], "local function ")
		if !ok {
			if m := luaLocal.FindStringSubmatch(lines[i]); m != nil && plainValue(m[2]) {
				parts = append(parts, &fn{name: m[1], text: lines[i]})
				continue
			}
			parts = append(parts, &fn{text: lines[i], keep: true})
			work = append(work, lines[i])
			continue
		}
		name, _, _ = strings.Cut(name, "(")
		start := i
		if !strings.HasSuffix(strings.TrimRight(lines[i], "\n"), " end") {
			for i < len(lines)-1 && strings.TrimRight(lines[i], "\n") != "end" {
				i++
			}
		}
		parts = append(parts, &fn{name: name, text: strings.Join(lines[start:i+1], "")})
	}
	// Mark from the body and the statements kept, then from each part
	// newly kept, until nothing more is reached.
	for len(work) > 0 {
		used := map[string]bool{}
		for _, id := range luaIdent.FindAllString(luaComment.ReplaceAllString(work[0], ""), -1) {
			used[id] = true
		}
		work = work[1:]
		for _, p := range parts {
			if p.name != "" && !p.keep && used[p.name] {
				p.keep = true
				work = append(work, p.text)
			}
		}
	}
	var b strings.Builder
	for _, p := range parts {
		if p.keep {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// plainValue reports whether value, with its comment cut, calls nothing
// (a call may do something even when its result is unused) and closes
// every bracket it opens (one that does not goes on to the next lines).
func plainValue(value string) bool {
	depth := 0
	for _, c := range luaComment.ReplaceAllString(value, "") {
		switch c {
		case '(':
			return false
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return depth == 0
}

var (
	luaIdent = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	// luaLocal is a top-level "local NAME = value" of one name.
	luaLocal = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*) = ([^\n]*)\n?$`)
	// luaComment is a comment to the end of the line; the scripts put no
	// "--" inside a string.
	luaComment = regexp.MustCompile(`--[^\n]*`)
)
