package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluicehq/sluice/flow/admin"
)

// progressBar draws a redrive's or a bulk delete's progress on one
// terminal line; it is used only when stderr is a terminal, and never
// with --json.
type progressBar struct {
	w     io.Writer
	drawn bool
}

const barWidth = 30

func (b *progressBar) redrive(p admin.RedriveProgress) { b.draw(p.Examined, p.Total, p.Matched) }
func (b *progressBar) delete(p admin.DeleteProgress)   { b.draw(p.Examined, p.Total, p.Matched) }

func (b *progressBar) draw(examined int, total int64, matched int) {
	total = max(total, int64(examined), 1)
	filled := int(int64(barWidth) * int64(examined) / total)
	fmt.Fprintf(b.w, "\r[%s%s] %d/%d examined, %d matched", strings.Repeat("=", filled),
		strings.Repeat(" ", barWidth-filled), examined, total, matched)
	b.drawn = true
}

// end ends the bar's line, if one was drawn; a nil bar does nothing.
func (b *progressBar) end() {
	if b != nil && b.drawn {
		fmt.Fprintln(b.w)
	}
}
