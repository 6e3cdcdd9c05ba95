package main

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"
)

// quantile returns the q-quantile (0..1) of xs by the nearest-rank method;
// NaN for none. xs is sorted in place.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// num formats a number for a table: NaN as "n/a", fitting precision.
func num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return commas(int64(math.Round(v)))
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// secs formats seconds with a unit, "n/a" for NaN.
func secs(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if v < 1 {
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.2f s", v)
}

// mdTable renders a Markdown table.
func mdTable(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteByte('\n')
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// checksTable renders figures beside their targets, the unmet in bold.
func checksTable(cs []scaleCheck) string {
	var rows [][]string
	for _, c := range cs {
		met := "met"
		if !c.Met {
			met = "**not met**"
		}
		rows = append(rows, []string{c.What, c.Target, c.Measured, met})
	}
	return mdTable([]string{"figure", "target", "measured", ""}, rows)
}

// machine describes where a report was made.
func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs, %s %s/%s, %s", host, runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

// writeOutputs writes name.md, name.json and name.svg into dir.
func writeOutputs(dir, name, md string, data any, svg string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(jsonSafe(reflect.ValueOf(data)), "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s.json: %w", name, err)
	}
	for ext, b := range map[string][]byte{".md": []byte(md), ".json": append(js, '\n'), ".svg": []byte(svg)} {
		if err := os.WriteFile(filepath.Join(dir, name+ext), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// bar is one bar of a chart panel. Ref bars (published figures) are drawn
// hatched-grey so they are not mistaken for measurements.
type bar struct {
	Label string
	Value float64
	Ref   bool
}

// panel is one small horizontal bar chart with its own scale.
type panel struct {
	Title string
	Unit  string
	Bars  []bar
}

// barChartSVG draws panels in a grid of two columns, each with its own
// linear scale from zero. Hand-written SVG: no dependencies, readable in any
// browser and on GitHub.
func barChartSVG(title, subtitle string, panels []panel) string {
	const (
		colW    = 520
		labelW  = 150
		barMax  = 260
		barH    = 16
		gap     = 5
		padTop  = 30
		padSide = 16
	)
	heights := make([]int, len(panels))
	for i, p := range panels {
		heights[i] = padTop + len(p.Bars)*(barH+gap) + 16
	}
	// Two columns; each row as tall as its taller panel.
	var rowY []int
	y := 64
	for i := 0; i < len(panels); i += 2 {
		rowY = append(rowY, y)
		h := heights[i]
		if i+1 < len(panels) {
			h = max(h, heights[i+1])
		}
		y += h
	}
	width, height := 2*colW+padSide, y+10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<defs><pattern id="ref" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#d9d9d9"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9a9a9a" stroke-width="2"/></pattern></defs>` + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="26" font-size="17" font-weight="600">%s</text>`+"\n", padSide, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="46" fill="#555">%s</text>`+"\n", padSide, html.EscapeString(subtitle))
	colors := []string{"#3b6fb6", "#e07b39", "#4c9a5b", "#b84a62", "#7a5cb0", "#8c6d31", "#2f8f9d", "#c4a000"}
	for i, p := range panels {
		x0 := padSide + (i%2)*colW
		y0 := rowY[i/2]
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="600">%s</text>`+"\n", x0, y0+16, html.EscapeString(p.Title+unitSuffix(p.Unit)))
		maxV := 0.0
		for _, br := range p.Bars {
			if !math.IsNaN(br.Value) && br.Value > maxV {
				maxV = br.Value
			}
		}
		for j, br := range p.Bars {
			by := y0 + padTop + j*(barH+gap)
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", x0+labelW-6, by+barH-4, html.EscapeString(br.Label))
			w := 0.0
			if maxV > 0 && !math.IsNaN(br.Value) && br.Value > 0 {
				w = math.Max(1, br.Value/maxV*barMax)
			}
			fill := colors[j%len(colors)]
			if br.Ref {
				fill = "url(#ref)"
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0+labelW, by, w, barH, fill)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#222">%s</text>`+"\n", float64(x0+labelW)+w+5, by+barH-4, html.EscapeString(num(br.Value)))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " (" + u + ")"
}

// jsonSafe turns v into maps, slices and scalars that encoding/json can
// write, with NaN and Inf (not measured) as null. Struct fields keep their
// json names; unexported fields and "-" are left out.
func jsonSafe(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return jsonSafe(v.Elem())
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case reflect.Struct:
		if _, ok := v.Interface().(time.Time); ok {
			return v.Interface()
		}
		m := map[string]any{}
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			fv := v.Field(i)
			if sf.Anonymous && sf.Tag.Get("json") == "" && fv.Kind() == reflect.Struct {
				// An embedded struct's fields are the struct's own, as
				// encoding/json has them.
				if inner, ok := jsonSafe(fv).(map[string]any); ok {
					for k, x := range inner {
						m[k] = x
					}
					continue
				}
			}
			if strings.Contains(opts, "omitempty") && fv.IsZero() {
				continue
			}
			m[name] = jsonSafe(fv)
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return []any{}
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = jsonSafe(v.Index(i))
		}
		return out
	case reflect.Map:
		m := map[string]any{}
		for _, k := range v.MapKeys() {
			m[fmt.Sprint(k.Interface())] = jsonSafe(v.MapIndex(k))
		}
		return m
	}
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// point is one sample of a series: X in seconds, Y NaN where nothing was
// read (the line breaks there).
type point struct{ X, Y float64 }

// series is one line of a line panel.
type series struct {
	Label  string
	Points []point
}

// linePanel is one time chart with its own scale from zero.
type linePanel struct {
	Title  string
	Unit   string
	Series []series
}

// marker is a vertical line across every panel (an event at X seconds).
type marker struct {
	X     float64
	Label string
}

// lineChartSVG draws panels one under the other over a shared time axis,
// one coloured line per series, with the markers as dashed vertical lines.
func lineChartSVG(title, subtitle string, panels []linePanel, marks []marker) string {
	const (
		w, panelH                     = 960, 230
		left, right, top, bottom, gap = 64, 170, 34, 34, 16
	)
	maxX := 1.0
	for _, p := range panels {
		for _, s := range p.Series {
			for _, pt := range s.Points {
				maxX = max(maxX, pt.X)
			}
		}
	}
	h := 64 + len(panels)*(panelH+gap)
	x := func(v float64) float64 { return left + v/maxX*float64(w-left-right) }
	colors := []string{"#3b6fb6", "#e07b39", "#4c9a5b", "#b84a62", "#7a5cb0", "#8c6d31"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="26" font-size="17" font-weight="600">%s</text>`+"\n", left, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="46" fill="#555">%s</text>`+"\n", left, html.EscapeString(subtitle))
	for pi, p := range panels {
		y0 := 64 + pi*(panelH+gap)
		maxY := 0.0
		for _, s := range p.Series {
			for _, pt := range s.Points {
				if !math.IsNaN(pt.Y) {
					maxY = max(maxY, pt.Y)
				}
			}
		}
		maxY = niceCeil(maxY)
		y := func(v float64) float64 { return float64(y0+panelH-bottom) - v/maxY*float64(panelH-top-bottom) }
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="600">%s</text>`+"\n", left, y0+top-14, html.EscapeString(p.Title+unitSuffix(p.Unit)))
		for i := 0; i <= 4; i++ {
			v := maxY * float64(i) / 4
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y(v), w-right, y(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", left-6, y(v)+4, html.EscapeString(num(v)))
		}
		step := niceCeil(maxX / 8)
		for t := 0.0; t <= maxX; t += step {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.0f s</text>`+"\n", x(t), y0+panelH-bottom+16, t)
		}
		for mi, m := range marks {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="4 3"/>`+"\n", x(m.X), y0+top, x(m.X), y0+panelH-bottom)
			if pi == 0 { // labels alternate between two heights so neighbours do not overlap
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#555" font-size="10" text-anchor="middle">%s</text>`+"\n", x(m.X), y0+top-2+10*(mi%2), html.EscapeString(m.Label))
			}
		}
		for si, s := range p.Series {
			c := colors[si%len(colors)]
			var run []string
			flush := func() {
				if len(run) > 0 {
					fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`+"\n", c, strings.Join(run, " "))
				}
				run = nil
			}
			for _, pt := range s.Points {
				if math.IsNaN(pt.Y) {
					flush()
					continue
				}
				run = append(run, fmt.Sprintf("%.1f,%.1f", x(pt.X), y(pt.Y)))
			}
			flush()
			ly := y0 + top + 6 + 18*si
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", w-right+14, ly, w-right+40, ly, c)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", w-right+46, ly+4, html.EscapeString(s.Label))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}
