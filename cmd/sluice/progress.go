package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluicehq/sluice/flow/admin"
)

// progressBar draws a redrive's progress on one terminal line; it is used
// only when stderr is a terminal, and never with --json.
type progressBar struct {
	w     io.Writer
	drawn bool
}

const barWidth = 30

func (b *progressBar) draw(p admin.RedriveProgress) {
	total := max(p.Total, int64(p.Examined), 1)
	filled := int(int64(barWidth) * int64(p.Examined) / total)
	fmt.Fprintf(b.w, "\r[%s%s] %d/%d examined, %d matched", strings.Repeat("=", filled),
		strings.Repeat(" ", barWidth-filled), p.Examined, total, p.Matched)
	b.drawn = true
}

func (b *progressBar) end() {
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}
