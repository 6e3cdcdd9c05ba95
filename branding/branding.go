// Package branding checks a room's look (title, logo, colours, background)
// and sanitizes the HTML fragment a shop puts in the waiting page's footer
// to a small allow-list, so an operator's settings cannot run script in a
// visitor's page.
package branding

import (
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/microcosm-cc/bluemonday"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Bounds of the settings.
const (
	MaxTitle  = 80   // characters
	MaxURL    = 2048 // bytes
	MaxFooter = 4000 // bytes, before sanitizing
)

// allowed are the footer's tags; void ones have no end tag.
var allowed = map[atom.Atom]bool{
	atom.A: true, atom.B: true, atom.Strong: true, atom.Em: true, atom.I: true,
	atom.P: true, atom.Br: true, atom.Span: true,
}

// dropped are the elements whose content goes with them: what is inside
// is script, style or markup that is not text for the visitor.
var dropped = []string{
	"script", "style", "template", "iframe", "object", "noscript", "noembed", "noframes", "textarea",
	"title", "xmp", "svg", "math", "select", "head",
}

// footerPolicy is the footer's allow-list. A bluemonday policy is safe for
// concurrent use once built.
var footerPolicy = newFooterPolicy()

// newFooterPolicy allows the tags of allowed, title on each of them, and
// href on a where safeHref takes it; an a whose href goes is kept bare.
func newFooterPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	for a := range allowed {
		p.AllowElements(a.String())
	}
	p.AllowNoAttrs().OnElements("a")
	p.AllowAttrs("title").Globally()
	p.AllowAttrs("href").OnElements("a")
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(false)
	for _, scheme := range []string{"http", "https", "mailto"} {
		p.AllowURLSchemeWithCustomPolicy(scheme, func(u *url.URL) bool { return safeHref(u.String()) })
	}
	p.SkipElementsContent(dropped...)
	return p
}

// Footer returns fragment with only the allowed tags (a, b, strong, em, i,
// p, br, span), only the attributes href (on a, http, https or mailto) and
// title, every element closed, and the text escaped. Other tags are left
// out with their text kept, except those whose content is not text (script,
// style, iframe…), which go whole; comments go.
func Footer(fragment string) string {
	return balance(footerPolicy.Sanitize(fragment))
}

// balance writes again clean, the policy's output, with each element
// closed where its parent closes or at the end, and end tags with no
// element open left out: a footer cannot leave the page's own elements
// open or close them.
func balance(clean string) string {
	z := html.NewTokenizerFragment(strings.NewReader(clean), "div")
	var out strings.Builder
	var open []atom.Atom
	for {
		switch z.Next() {
		case html.ErrorToken:
			for i := len(open) - 1; i >= 0; i-- {
				out.WriteString("</" + open[i].String() + ">")
			}
			return out.String()
		case html.TextToken:
			out.WriteString(html.EscapeString(string(z.Text())))
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if !allowed[tok.DataAtom] {
				continue
			}
			out.WriteString("<" + tok.DataAtom.String())
			for _, a := range tok.Attr {
				out.WriteString(" " + a.Key + `="` + html.EscapeString(a.Val) + `"`)
			}
			out.WriteString(">")
			// <a/> opens an a, as a browser reads it: only void
			// elements (br) close themselves.
			if tok.DataAtom != atom.Br {
				open = append(open, tok.DataAtom)
			}
		case html.EndTagToken:
			tok := z.Token()
			for i := len(open) - 1; i >= 0; i-- {
				if open[i] == tok.DataAtom {
					for j := len(open) - 1; j >= i; j-- {
						out.WriteString("</" + open[j].String() + ">")
					}
					open = open[:i]
					break
				}
			}
		}
	}
}

// safeHref reports whether a link goes to an http, https or mailto URL.
func safeHref(v string) bool {
	v = strings.TrimSpace(v)
	u, err := url.Parse(v)
	if err != nil || len(v) > MaxURL {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "mailto":
		return u.Opaque != ""
	}
	return false
}

var colorRe = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// CheckColor accepts "" or a #rgb or #rrggbb colour.
func CheckColor(v string) string {
	if v == "" || colorRe.MatchString(v) {
		return ""
	}
	return "must be a colour as #rgb or #rrggbb, or empty"
}

// CheckImageURL accepts "" or an http(s) URL or a path on this site
// ("/shop/logo.png"), as an image source.
func CheckImageURL(v string) string {
	if v == "" {
		return ""
	}
	msg := "must be an http or https URL or a path starting with /, or empty"
	if len(v) > MaxURL || strings.ContainsAny(v, " \t\r\n\"'<>\\()") {
		return msg
	}
	u, err := url.Parse(v)
	if err != nil {
		return msg
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return msg
		}
	case "":
		if !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") {
			return msg
		}
	default:
		return msg
	}
	return ""
}

// CheckBackground accepts "" or a colour or an image URL.
func CheckBackground(v string) string {
	if strings.HasPrefix(v, "#") {
		if CheckColor(v) == "" {
			return ""
		}
	} else if CheckImageURL(v) == "" {
		return ""
	}
	return "must be a colour (#rgb or #rrggbb), an http or https image URL or a path starting with /, or empty"
}

// CheckTitle accepts a title of at most MaxTitle characters, without
// control characters.
func CheckTitle(v string) string {
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxTitle || strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return "must be at most 80 characters of text, without line breaks"
	}
	return ""
}

// CheckFooter bounds the footer's size (its tags are Footer's to clean).
func CheckFooter(v string) string {
	if len(v) > MaxFooter || !utf8.ValidString(v) {
		return "must be at most 4000 bytes of UTF-8 HTML"
	}
	return ""
}
