// Package msgview shows msgpack values (job arguments, results, step
// checkpoints, signal payloads) to people: the CLI's and the console's
// views decode them the same way.
package msgview

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Decode decodes msgpack b into a value encoding/json takes (see JSON).
// Maps decode with keys of any type (msgpack allows them; Go's default
// decoding into any would refuse a map whose keys are not strings).
func Decode(b []byte) (any, error) {
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return JSON(v), nil
}

// JSON turns what msgpack may decode to into what encoding/json takes:
// maps with keys of any type get string keys, and bytes become strings.
// It changes maps and slices in place.
func JSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = JSON(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = JSON(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = JSON(e)
		}
		return x
	case []byte:
		return string(x)
	}
	return v
}
