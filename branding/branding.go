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
var dropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Iframe: true, atom.Object: true,
	atom.Noscript: true, atom.Noembed: true, atom.Noframes: true, atom.Textarea: true,
	atom.Title: true, atom.Xmp: true, atom.Svg: true, atom.Math: true, atom.Select: true, atom.Head: true,
}

// Footer returns fragment with only the allowed tags (a, b, strong, em, i,
// p, br, span), only the attributes href (on a, http, https or mailto) and
// title, every element closed, and the text escaped. Other tags are left
// out with their text kept, except those whose content is not text (script,
// style, iframe…), which go whole; comments go.
func Footer(fragment string) string {
	z := html.NewTokenizerFragment(strings.NewReader(fragment), "div")
	var out strings.Builder
	var open []atom.Atom // allowed elements open in out
	skip := 0            // depth inside dropped elements
	for {
		switch z.Next() {
		case html.ErrorToken:
			for i := len(open) - 1; i >= 0; i-- {
				out.WriteString("</" + open[i].String() + ">")
			}
			return out.String()
		case html.TextToken:
			if skip == 0 {
				out.WriteString(html.EscapeString(string(z.Text())))
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if dropped[tok.DataAtom] {
				if tok.Type == html.StartTagToken {
					skip++
				}
				continue
			}
			if skip > 0 || !allowed[tok.DataAtom] {
				continue
			}
			out.WriteString("<" + tok.DataAtom.String())
			for _, a := range tok.Attr {
				if a.Namespace != "" {
					continue
				}
				switch {
				case a.Key == "title":
				case a.Key == "href" && tok.DataAtom == atom.A && safeHref(a.Val):
				default:
					continue
				}
				out.WriteString(" " + a.Key + `="` + html.EscapeString(a.Val) + `"`)
			}
			out.WriteString(">")
			if tok.DataAtom != atom.Br && tok.Type == html.StartTagToken {
				open = append(open, tok.DataAtom)
			}
		case html.EndTagToken:
			tok := z.Token()
			if dropped[tok.DataAtom] {
				if skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 || !allowed[tok.DataAtom] {
				continue
			}
			// Close up to the matching open element; an end tag with none
			// open is left out.
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
