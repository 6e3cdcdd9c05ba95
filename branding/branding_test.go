package branding

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestFooter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`Hello <b>world</b>`, `Hello <b>world</b>`},
		{`<p>© Shop · <a href="https://shop.example/terms" title="Terms">Terms</a></p>`, `<p>© Shop · <a href="https://shop.example/terms" title="Terms">Terms</a></p>`},
		{`<a href="mailto:help@shop.example">mail</a>`, `<a href="mailto:help@shop.example">mail</a>`},
		{`<a href="javascript:alert(1)">x</a>`, `<a>x</a>`},
		{`<a href=" JaVaScRiPt:alert(1)">x</a>`, `<a>x</a>`},
		{`<a href="data:text/html,<script>">x</a>`, `<a>x</a>`},
		{`<a href="/relative">x</a>`, `<a>x</a>`},
		{`<a href="//evil.example">x</a>`, `<a>x</a>`},
		{`<span title="t" onclick="x()" style="color:red" class="c">s</span>`, `<span title="t">s</span>`},
		{`<b href="https://x.example">b</b>`, `<b>b</b>`},
		{`<script>alert(1)</script>after`, `after`},
		{`<style>body{display:none}</style>ok`, `ok`},
		{`<img src=x onerror=alert(1)>text`, `text`},
		{`<iframe src="https://x"></iframe><div>kept <u>text</u></div>`, `kept text`},
		{`<svg><script>alert(1)</script><text>x</text></svg>y`, `y`},
		{`<!-- secret --><em>e</em>`, `<em>e</em>`},
		{`<b><i>unclosed`, `<b><i>unclosed</i></b>`},
		{`</p>stray end<br/>next<br>`, `stray end<br>next<br>`},
		{`<b>x<i>y</b>z</i>`, `<b>x<i>y</i></b>z`},
		{`5 < 6 & "quotes"`, `5 &lt; 6 &amp; &#34;quotes&#34;`},
		{`<a href="https://x.example/?a=1&amp;b=&quot;2">q</a>`, `<a href="https://x.example/?a=1&amp;b=&#34;2">q</a>`},
		{`<a title='"><script>alert(1)</script>'>t</a>`, `<a title="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">t</a>`},
		{`<scr<script>ipt>alert(1)</script>`, `ipt&gt;alert(1)`},
		{`<xmp><b>raw</b></xmp>after`, `after`},
		{`<A/>x<br/>`, `<a>x<br></a>`}, // only void elements close themselves
	} {
		if got := Footer(tc.in); got != tc.want {
			t.Errorf("Footer(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// FuzzFooter: whatever goes in, what comes out has no tag outside the
// allow-list, no attribute but href and title, and is stable (cleaning
// it again changes nothing).
func FuzzFooter(f *testing.F) {
	for _, s := range []string{`<b>x</b>`, `<a href="https://a.example" onclick=1>y</a>`, `<script>1</script>`, `<<p>>`, `<svg/onload=alert(1)>`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Footer(in)
		if again := Footer(out); again != out {
			t.Fatalf("not stable:\n in %q\nout %q\nagain %q", in, out, again)
		}
		z := html.NewTokenizerFragment(strings.NewReader(out), "div")
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			tok := z.Token()
			switch tt {
			case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
				if !allowed[tok.DataAtom] {
					t.Fatalf("tag %q in output %q (input %q)", tok.Data, out, in)
				}
				for _, a := range tok.Attr {
					if a.Key != "title" && (a.Key != "href" || !safeHref(a.Val)) {
						t.Fatalf("attribute %s=%q in output %q (input %q)", a.Key, a.Val, out, in)
					}
				}
			case html.CommentToken, html.DoctypeToken:
				t.Fatalf("comment or doctype in output %q (input %q)", out, in)
			}
		}
	})
}

func TestChecks(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "#fff": true, "#A1b2C3": true, "red": false, "#ffff": false, "#12345g": false} {
		if got := CheckColor(v) == ""; got != ok {
			t.Errorf("CheckColor(%q) ok=%v", v, got)
		}
	}
	for v, ok := range map[string]bool{
		"": true, "https://cdn.example/logo.png": true, "/static/logo.svg": true, "http://x.example/a.png": true,
		"//evil.example/x.png": false, "javascript:alert(1)": false, "data:image/png;base64,AAAA": false,
		"logo.png": false, "https:///x": false, "https://x.example/a b.png": false, "https://x.example/a\").png": false,
	} {
		if got := CheckImageURL(v) == ""; got != ok {
			t.Errorf("CheckImageURL(%q) ok=%v", v, got)
		}
	}
	for v, ok := range map[string]bool{"#123": true, "https://cdn.example/bg.jpg": true, "#12": false, "url(x)": false} {
		if got := CheckBackground(v) == ""; got != ok {
			t.Errorf("CheckBackground(%q) ok=%v", v, got)
		}
	}
	if CheckTitle("Acme Drop · 東京") != "" || CheckTitle("two\nlines") == "" || CheckTitle(strings.Repeat("x", 81)) == "" {
		t.Error("CheckTitle")
	}
	if CheckFooter(strings.Repeat("x", MaxFooter)) != "" || CheckFooter(strings.Repeat("x", MaxFooter+1)) == "" {
		t.Error("CheckFooter")
	}
}
