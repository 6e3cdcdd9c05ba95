package settings

import (
	"strconv"
	"strings"
)

// FormField is a setting as the dashboard shows it.
type FormField struct {
	Name    string   `json:"name"`
	Label   string   `json:"label"`
	Kind    string   `json:"kind"` // select, bool, int, number, time or text
	Options []string `json:"options,omitempty"`
	Min     *float64 `json:"min,omitempty"`
	Max     *float64 `json:"max,omitempty"`
	Hint    string   `json:"hint"`
	// Steer: an operator may change it; the others need the admin role.
	Steer bool `json:"steer"`
	// Form: it is on the settings form (paused has buttons instead).
	Form bool `json:"form"`
}

// Form describes every setting for the dashboard, in order.
func Form() []FormField {
	var out []FormField
	for _, f := range Fields {
		ff := FormField{Name: f.Name, Label: f.Label, Kind: string(f.Kind), Hint: f.Doc, Steer: f.Steer, Form: !f.NoForm}
		switch f.Kind {
		case Enum:
			ff.Kind, ff.Options = "select", f.Options
		case Bool:
			ff.Options = []string{f.Default, strconv.FormatBool(f.Default != "true")}
		case Seconds:
			ff.Kind = "number"
		}
		if f.Kind == Int || f.Kind == Number || f.Kind == Seconds {
			lo, hi := 0.0, f.Max
			ff.Min, ff.Max = &lo, &hi
		}
		out = append(out, ff)
	}
	return out
}

// Markdown is the reference table of the settings, as docs/rooms.md
// carries it.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| setting | type | values | default | what it does |\n|---|---|---|---|---|\n")
	for _, f := range Fields {
		b.WriteString("| `" + f.Name + "` | " + string(f.Kind) + " | " + values(f) + " | " + f.Default + " | " + escape(f.Doc) + " |\n")
	}
	return b.String()
}

// values says in words which values f takes.
func values(f Field) string {
	switch f.Kind {
	case Enum:
		return "`" + strings.Join(f.Options, "`, `") + "`"
	case Int, Number:
		return "0–" + num(f.Max)
	case Seconds:
		return "0, " + num(f.Min) + "–" + num(f.Max)
	case Bool:
		return "`true`, `false`"
	case Time:
		return "RFC 3339 or empty"
	}
	return "text"
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
