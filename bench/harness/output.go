package harness

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
)

// WriteJSON writes v as indented JSON to the file path, or to stdout when
// path is "-" (as -json takes it).
func WriteJSON(v any, path string, stdout io.Writer) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Thousands formats v rounded to an integer with comma separators:
// 12345.6 is "12,346".
func Thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
