package store

import (
	"reflect"
	"testing"
	"time"
)

// TestPlainCoversEverySetting: a job with any setting but its ID, kind
// and payload away from its default is not plain, so the enqueue script
// is sent that setting. A field added to NewJob and forgotten in plain
// fails here.
func TestPlainCoversEverySetting(t *testing.T) {
	base := NewJob{Local: "a", Generated: true, Kind: "k", Payload: []byte("p"), MaxAttempts: DefaultMaxAttempts}
	if !base.plain() {
		t.Fatal("a job with only ID, kind and payload is not plain")
	}
	always := map[string]bool{"Local": true, "Generated": true, "Relayed": true, "Tick": true, "Kind": true, "Payload": true}
	typ := reflect.TypeFor[NewJob]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if always[name] {
			continue
		}
		j := base
		if !setNonZero(reflect.ValueOf(&j).Elem().Field(i)) {
			t.Fatalf("field %s: no way to set it (type %s)", name, typ.Field(i).Type)
		}
		if j.plain() {
			t.Errorf("a job with %s set is still plain", name)
		}
	}
}

// setNonZero changes v away from its value in a plain job; of a struct,
// it changes the first field it can.
func setNonZero(v reflect.Value) bool {
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.UnixMilli(1)))
		return true
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && setNonZero(v.Field(i)) {
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}
