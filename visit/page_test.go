package visit

import (
	"encoding/json"
	"strings"
	"testing"
)

// testLanguages is the embedded translations.
func testLanguages(t *testing.T) *languages {
	t.Helper()
	ls, err := loadLanguages()
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func TestLanguagePick(t *testing.T) {
	ls := testLanguages(t)
	for _, tc := range []struct{ cookie, header, want string }{
		{"", "", "en"},
		{"", "de-DE,de;q=0.9,en;q=0.8", "de"},
		{"", "fr-CH, fr;q=0.9, en;q=0.8", "fr"},
		{"", "en;q=0.5, ja;q=0.9", "ja"},
		{"", "zh-CN", "zh"},
		{"", "zh-Hans-CN,zh;q=0.9", "zh"},
		{"", "pt-BR", "pt"},
		{"", "ES", "es"},
		{"", "nl, sv;q=0.8", "en"},       // none supported
		{"", "nl, de;q=0.1", "de"},       // the one supported, however low
		{"", "de;q=0, fr;q=0.2", "fr"},   // q=0 is "not this one"
		{"", "de;q=abc, fr;q=0.2", "fr"}, // a bad weight drops the tag
		{"ja", "de-DE", "ja"},            // the switcher's choice wins
		{"xx", "de-DE", "de"},            // an unknown choice does not
		{"", strings.Repeat("x,", 5000), "en"},
	} {
		if got := ls.pick(tc.cookie, tc.header); got != tc.want {
			t.Errorf("pick(%q, %q) = %q, want %q", tc.cookie, tc.header, got, tc.want)
		}
	}
}

// Chinese in Traditional script is not served the Simplified page (zh):
// without a Traditional one it gets the fallback; the Simplified tags, and
// Chinese with no script or region, get zh.
func TestLanguageScript(t *testing.T) {
	ls := testLanguages(t)
	for header, want := range map[string]string{
		"zh-TW": "en", "zh-Hant": "en", "zh-HK": "en", "zh-MO": "en", "zh-Hant-CN": "en",
		// Asked for Simplified too, if less; or for another language.
		"zh-TW,zh;q=0.9": "zh", "zh-TW,ja;q=0.5": "ja",
		"zh-CN": "zh", "zh-Hans": "zh", "zh": "zh", "zh-SG": "zh", "zh-Hans-TW": "zh", "cmn": "zh",
		// Related languages are not the same one.
		"gsw": "en", "gl": "en", "yue": "en",
		"pt-PT": "pt", "es-419": "es", "en-GB": "en", "de-Latf": "en",
	} {
		if got := ls.pick("", header); got != want {
			t.Errorf("pick(%q) = %q, want %q", header, got, want)
		}
	}
	if got := ls.pick("zh-TW", "de"); got != "de" {
		t.Errorf("a remembered zh-TW with no Traditional page: got %q, want de", got)
	}
}

// With a Traditional page, the Traditional tags get it and the Simplified
// ones still get zh.
func TestLanguageTraditional(t *testing.T) {
	ls, err := newLanguages([]translation{{Code: "zh"}, {Code: "zh-Hant"}, {Code: "en"}})
	if err != nil {
		t.Fatal(err)
	}
	if ls.list[0].Code != "en" {
		t.Errorf("first language %q, want the fallback en", ls.list[0].Code)
	}
	for header, want := range map[string]string{
		"zh-TW": "zh-Hant", "zh-Hant": "zh-Hant", "zh-HK": "zh-Hant", "zh-Hant-HK": "zh-Hant",
		"zh-CN": "zh", "zh-Hans": "zh", "zh": "zh", "ja": "en",
	} {
		if got := ls.pick("", header); got != want {
			t.Errorf("pick(%q) = %q, want %q", header, got, want)
		}
	}
	if _, err := newLanguages([]translation{{Code: "en"}, {Code: "not a tag"}}); err == nil {
		t.Error("a translation named by no language tag was taken")
	}
}

// Weights order the entries, ties keep the header's order, and anything
// that is not an Accept-Language header asks for nothing.
func TestLanguageAcceptHeader(t *testing.T) {
	ls := testLanguages(t)
	for _, tc := range []struct{ header, want string }{
		{"fr;q=0.3, de;q=0.7, ja;q=0.5", "de"},
		{"fr;q=0.5, de;q=0.5", "fr"},
		{"de;q=0.5, fr;q=0.5", "de"},
		{"ja;q=0.001, nl", "ja"},
		{"de;q=1.5, fr;q=0.1", "fr"}, // a weight over 1 is not one
		{"de;q=-1, fr;q=0.1", "fr"},
		{"*", "en"},
		{"*;q=0.5, pt", "pt"},
		{";;;,,,", "en"},
		{"\x00\xff garbage", "en"},
		{"de-DE-u-co-phonebk", "de"},
		{"12345678901234567890", "en"},
		{strings.Repeat("nl,", 100) + "de", "en"}, // past the entries looked at
	} {
		if got := ls.pick("", tc.header); got != tc.want {
			t.Errorf("pick(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}

func TestBootPage(t *testing.T) {
	boot := pageBoot{Lang: "de", Text: json.RawMessage(`{"a":"\u003c/script\u003e"}`)}
	for _, tc := range []struct{ in, wantPrefix string }{
		{`<!doctype html><html lang="en"><head><title>x</title></head><body></body></html>`, `<!doctype html><html lang="de"><head><title>x</title><script type="application/json" id="waitroom-boot">`},
		{`<html class="x"><body>hi</body></html>`, `<html lang="de" class="x">` + "\n" + `<script type="application/json" id="waitroom-boot">`},
		{`<p>bare</p>`, `<script type="application/json" id="waitroom-boot">`},
		{`<HTML LANG='fr'><HEAD></HEAD>`, `<HTML lang="de"><HEAD><script type="application/json" id="waitroom-boot">`},
	} {
		got := string(bootPage([]byte(tc.in), boot))
		if !strings.HasPrefix(got, tc.wantPrefix) {
			t.Errorf("bootPage(%q) =\n%s\nwant prefix\n%s", tc.in, got, tc.wantPrefix)
		}
		if strings.Count(got, "</script>") != 1 {
			t.Errorf("bootPage(%q): the text closed the script early:\n%s", tc.in, got)
		}
	}
}
