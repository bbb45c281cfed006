package tokenbench

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// SVG draws the cumulative input of each side against the cluster's pods,
// both on log scales, for one scenario: where direct tool calls grow with
// the cluster and code mode stays flat.
func SVG(results []Result, scenario string) string {
	const w, h, left, right, top, bottom = 640.0, 360.0, 70.0, 170.0, 30.0, 50.0
	series := map[string][][2]float64{}
	var sides []string
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, r := range results {
		if r.Run.Scenario != scenario || r.Pods <= 0 {
			continue
		}
		x, y := math.Log10(float64(r.Pods)), math.Log10(float64(r.Run.CumulativeInput()))
		if series[r.Run.Side] == nil {
			sides = append(sides, r.Run.Side)
		}
		series[r.Run.Side] = append(series[r.Run.Side], [2]float64{x, y})
		minX, maxX, minY, maxY = math.Min(minX, x), math.Max(maxX, x), math.Min(minY, y), math.Max(maxY, y)
	}
	minY, maxY = math.Floor(minY), math.Ceil(maxY)
	if maxX == minX {
		maxX = minX + 1
	}
	px := func(x float64) float64 { return left + (x-minX)/(maxX-minX)*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - (y-minY)/(maxY-minY)*(h-top-bottom) }
	colors := []string{"#d62728", "#ff7f0e", "#2ca02c", "#1f77b4"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18" font-size="14">%s: cumulative input tokens (o200k_base)</text>`+"\n", left, scenario)
	for e := minY; e <= maxY; e++ {
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, py(e), w-right, py(e), left-6, py(e)+4, humanize(math.Pow(10, e)))
	}
	for _, pts := range series {
		for _, p := range pts {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s pods</text>`+"\n", px(p[0]), h-bottom+18, humanize(math.Pow(10, p[0])))
		}
		break
	}
	sort.Strings(sides)
	for i, s := range sides {
		pts := series[s]
		sort.Slice(pts, func(a, b int) bool { return pts[a][0] < pts[b][0] })
		var path []string
		for _, p := range pts {
			path = append(path, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		c := colors[i%len(colors)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(path, " "))
		last := pts[len(pts)-1]
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", px(last[0])+8, py(last[1])+4, c, s)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func humanize(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
