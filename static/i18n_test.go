package static

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"
)

// want are the languages the page must come in.
var want = []string{"de", "en", "es", "fr", "ja", "pt", "zh"}

var placeholder = regexp.MustCompile(`\{[a-zA-Z]+\}`)

// TestTranslationsComplete fails when a language misses a key English has,
// has a key English does not, leaves one empty, or drops or adds a {placeholder}.
func TestTranslationsComplete(t *testing.T) {
	langs, err := Languages()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(langs, want) {
		t.Fatalf("languages %v, want %v", langs, want)
	}
	read := func(code string) map[string]string {
		t.Helper()
		raw, err := Files.ReadFile("i18n-" + code + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("i18n-%s.json: %v", code, err)
		}
		return m
	}
	en := read("en")
	for _, code := range langs {
		t.Run(code, func(t *testing.T) {
			m := read(code)
			for k, v := range en {
				tv, ok := m[k]
				if !ok {
					t.Errorf("missing key %q", k)
					continue
				}
				if tv == "" {
					t.Errorf("key %q is empty", k)
				}
				a, b := placeholder.FindAllString(v, -1), placeholder.FindAllString(tv, -1)
				slices.Sort(a)
				slices.Sort(b)
				if !slices.Equal(a, b) {
					t.Errorf("key %q has placeholders %v, English has %v", k, b, a)
				}
			}
			for k := range m {
				if _, ok := en[k]; !ok {
					t.Errorf("extra key %q (not in English)", k)
				}
			}
		})
	}
}

// TestPageKeysTranslated checks that every key index.html and page.js use
// is in the English file (and so, by the test above, in every language).
func TestPageKeysTranslated(t *testing.T) {
	raw, _ := Files.ReadFile("i18n-en.json")
	var en map[string]string
	if err := json.Unmarshal(raw, &en); err != nil {
		t.Fatal(err)
	}
	uses := map[string]*regexp.Regexp{
		"index.html": regexp.MustCompile(`data-i18n(?:-[a-z-]+)?="([A-Za-z]+)"`),
		"page.js":    regexp.MustCompile(`\bt\("([A-Za-z]+)"`),
	}
	for file, re := range uses {
		src, err := Files.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found := re.FindAllSubmatch(src, -1)
		if len(found) == 0 {
			t.Fatalf("%s uses no translation keys", file)
		}
		for _, m := range found {
			if _, ok := en[string(m[1])]; !ok {
				t.Errorf("%s uses key %q, which i18n-en.json lacks", file, m[1])
			}
		}
	}
}
