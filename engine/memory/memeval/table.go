package memeval

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Row is one method's line in the results table, e.g. "bm25", "vector",
// "hybrid (weighted 0.7/0.3)", "hybrid (rrf k=60)", "bm25 per-turn floor".
type Row struct {
	Method  string
	Metrics Metrics
}

var headers = []string{"N", "R@1", "R@5", "R@10", "R@20", "hit@5", "MRR"}

func cells(m Metrics) []string {
	c := []string{fmt.Sprint(m.N)}
	for _, v := range []float64{m.Recall1, m.Recall5, m.Recall10, m.Recall20, m.Hit5, m.MRR} {
		c = append(c, fmt.Sprintf("%.3f", v))
	}
	for _, cat := range Categories {
		cm, ok := m.ByCategory[cat]
		if !ok || cm.N == 0 {
			c = append(c, "-")
			continue
		}
		c = append(c, fmt.Sprintf("%.3f", cm.Recall5))
	}
	return c
}

func allHeaders() []string {
	h := append([]string(nil), headers...)
	for _, cat := range Categories {
		h = append(h, "R@5 "+CategoryName(cat))
	}
	return h
}

// WriteTable writes the rows as fixed-width text: the method left-aligned,
// then N, recall@1/5/10/20, hit@5, MRR and recall@5 per category,
// right-aligned.
func WriteTable(w io.Writer, rows []Row) error {
	h := allHeaders()
	width := len("method")
	for _, r := range rows {
		width = max(width, len(r.Method))
	}
	cw := make([]int, len(h))
	for i, s := range h {
		cw[i] = len(s)
	}
	body := make([][]string, len(rows))
	for j, r := range rows {
		body[j] = cells(r.Metrics)
		for i, s := range body[j] {
			cw[i] = max(cw[i], len(s))
		}
	}
	bw := bufio.NewWriter(w)
	line := func(first string, c []string) {
		fmt.Fprintf(bw, "%-*s", width, first)
		for i, s := range c {
			fmt.Fprintf(bw, "  %*s", cw[i], s)
		}
		bw.WriteByte('\n')
	}
	line("method", h)
	for j, r := range rows {
		line(r.Method, body[j])
	}
	return bw.Flush()
}

// WriteMarkdown writes the rows as a Markdown table, for the README.
func WriteMarkdown(w io.Writer, rows []Row) error {
	h := allHeaders()
	bw := bufio.NewWriter(w)
	bw.WriteString("| method | " + strings.Join(h, " | ") + " |\n")
	bw.WriteString("|---|" + strings.Repeat("---:|", len(h)) + "\n")
	for _, r := range rows {
		m := strings.ReplaceAll(r.Method, "|", `\|`)
		bw.WriteString("| " + m + " | " + strings.Join(cells(r.Metrics), " | ") + " |\n")
	}
	return bw.Flush()
}
