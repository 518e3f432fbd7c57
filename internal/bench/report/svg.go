package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// chart geometry, in SVG user units.
const (
	chartW, chartH         = 760, 420
	padL, padR, padT, padB = 70, 190, 40, 50
)

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

type series struct {
	name   string
	sorted []float64
	dash   bool
}

// WriteSVG renders the cumulative distributions of TTFT and end-to-end
// latency of every target as a hand-written SVG line chart.
func (r *Report) WriteSVG(w io.Writer) error {
	var ss []series
	for _, s := range r.Summaries {
		var ttft, e2e []float64
		for i := range r.Rows {
			row := &r.Rows[i]
			if row.Target == s.Target && row.OK() {
				ttft = append(ttft, row.TTFTMS)
				e2e = append(e2e, row.E2EMS)
			}
		}
		sort.Float64s(ttft)
		sort.Float64s(e2e)
		ss = append(ss, series{name: s.Target + " TTFT", sorted: ttft, dash: true},
			series{name: s.Target + " end-to-end", sorted: e2e})
	}
	maxX := 0.0
	for _, s := range ss {
		if n := len(s.sorted); n > 0 {
			maxX = math.Max(maxX, s.sorted[n-1])
		}
	}
	maxX = niceCeil(maxX)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">raygw bench: latency distribution (%s)</text>`+"\n",
		padL, html.EscapeString(r.Config.Workload))
	writeAxes(&b, maxX)
	for i, s := range ss {
		color := palette[(i/2)%len(palette)]
		writeSeries(&b, s, maxX, color)
		ly := padT + 10 + i*18
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n",
			chartW-padR+12, ly, chartW-padR+36, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s (n=%d)</text>`+"\n", chartW-padR+42, ly+4, html.EscapeString(s.name), len(s.sorted))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSVGFile writes the chart to path.
func (r *Report) WriteSVGFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	if err := r.WriteSVG(f); err != nil {
		f.Close()
		return fmt.Errorf("write chart: %w", err)
	}
	return f.Close()
}

func plotW() float64 { return float64(chartW - padL - padR) }
func plotH() float64 { return float64(chartH - padT - padB) }

func xPos(v, maxX float64) float64 { return float64(padL) + v/maxX*plotW() }
func yPos(q float64) float64       { return float64(padT) + (1-q)*plotH() }

func writeAxes(b *strings.Builder, maxX float64) {
	x0, y0 := float64(padL), yPos(0)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x0+plotW(), y0)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x0, yPos(1))
	for i := 0; i <= 5; i++ {
		v := maxX * float64(i) / 5
		x := xPos(v, maxX)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, y0, x, yPos(1))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, y0+16, ms(v))
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 0.95, 1} {
		y := yPos(q)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0, y, x0+plotW(), y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">p%g</text>`+"\n", x0-6, y+4, q*100)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">latency</text>`+"\n", x0+plotW()/2, chartH-10)
	fmt.Fprintf(b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">share of requests</text>`+"\n",
		yPos(0.5), yPos(0.5))
}

func writeSeries(b *strings.Builder, s series, maxX float64, color string) {
	if len(s.sorted) == 0 || maxX <= 0 {
		return
	}
	dash := ""
	if s.dash {
		dash = ` stroke-dasharray="6 3"`
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="`, color, dash)
	n := len(s.sorted)
	step := 1
	if n > 400 {
		step = n / 400
	}
	fmt.Fprintf(b, "%.1f,%.1f", xPos(s.sorted[0], maxX), yPos(0))
	for i := 0; i < n; i += step {
		fmt.Fprintf(b, " %.1f,%.1f", xPos(s.sorted[i], maxX), yPos(float64(i+1)/float64(n)))
	}
	fmt.Fprintf(b, " %.1f,%.1f", xPos(s.sorted[n-1], maxX), yPos(1))
	b.WriteString(`"/>` + "\n")
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
