package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/internal/msgview"
)

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() { _ = t.tw.Flush() }

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

const timeLayout = "2006-01-02 15:04:05.000"

// when formats a time in UTC, "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// ts is a time for JSON: nil for none.
func ts(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// decoded turns msgpack into a value JSON can print (nil for none, the
// raw bytes as a string when it does not decode).
func decoded(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	v, err := msgview.Decode(b)
	switch {
	case errors.Is(err, msgview.ErrTooDeep):
		return fmt.Sprintf("<%d bytes of msgpack nested more than %d levels: not shown>", len(b), msgview.MaxDepth)
	case err != nil:
		return fmt.Sprintf("<%d bytes, not msgpack>", len(b))
	}
	return v
}

// compact is v as one line of JSON.
func compact(v any) string {
	if v == nil {
		return "-"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// dur formats a duration, "-" for zero.
func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}
