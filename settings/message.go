package settings

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxMessage is the most characters of a room's message to the waiting.
const MaxMessage = 500

// CheckMessage reports why msg cannot be a room's message: it must be plain
// text of at most MaxMessage characters, without markup or control
// characters other than line breaks. The page shows it as text, never as
// HTML; refusing markup keeps an operator from expecting otherwise.
func CheckMessage(msg string) error {
	switch {
	case !utf8.ValidString(msg):
		return errors.New("must be UTF-8 text")
	case utf8.RuneCountInString(msg) > MaxMessage:
		return errors.New("must be at most 500 characters")
	case strings.ContainsAny(msg, "<>"):
		return errors.New("must be plain text (no HTML: < and > are refused)")
	case strings.TrimSpace(msg) == "" && msg != "":
		return errors.New("must not be only spaces (an empty message clears it)")
	}
	for _, r := range msg {
		if r != '\n' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029') {
			return errors.New("must not contain control characters other than line breaks")
		}
	}
	return nil
}
