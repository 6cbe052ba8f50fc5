package keys_test

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
)

// TestReservedCoversEveryPartitionKey calls every method of Partition
// that names a key (string arguments "a:b", numbers 7) and checks that
// the name is reserved: a key family added to the partition without its
// entry in the reserved list would let an effect write it.
func TestReservedCoversEveryPartitionKey(t *testing.T) {
	p := keys.Partition{NS: "app", Queue: "mail", Index: 3}
	v := reflect.ValueOf(p)
	// not key names; Terminal's four keys are in Script, checked below
	notKeys := map[string]bool{"Tag": true, "Prefix": true, "Script": true, "DoneChannel": true, "String": true, "Terminal": true}
	for i := 0; i < v.NumMethod(); i++ {
		m := v.Type().Method(i)
		if notKeys[m.Name] || m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.String {
			continue
		}
		var args []reflect.Value
		for a := 1; a < m.Type.NumIn(); a++ { // 0 is the receiver
			switch m.Type.In(a).Kind() {
			case reflect.String:
				args = append(args, reflect.ValueOf("a:b"))
			case reflect.Int:
				args = append(args, reflect.ValueOf(7))
			case reflect.Int64:
				args = append(args, reflect.ValueOf(int64(7)))
			default:
				t.Fatalf("%s takes a %s: teach the test", m.Name, m.Type.In(a))
			}
		}
		key := v.Method(i).Call(args)[0].String()
		if !keys.Reserved("app", key) {
			t.Errorf("%s: %q is not reserved", m.Name, key)
		}
	}
	for _, key := range p.Script() {
		if !keys.Reserved("app", key) {
			t.Errorf("Script: %q is not reserved", key)
		}
	}
	w, s := keys.Workers{NS: "app"}, keys.Schedules{NS: "app"}
	mark, _ := keys.EffectMark("app", "{user}:balance", "job:step:0")
	for _, key := range []string{
		keys.Queues("app"), keys.ResizeLock("app", "mail"), keys.Retention("app"),
		w.Live(), w.Worker("w1"), s.Names(), s.Schedule("nightly"), s.Pending("nightly"), mark,
	} {
		if !keys.Reserved("app", key) {
			t.Errorf("%q is not reserved", key)
		}
	}
}

// TestReservedLeavesUserKeys: names a user may write with an effect stay
// free: a slot key (idempotency.SlotKey's "u:"), names of their own under
// a partition's tag, other namespaces, tags that are no partition's.
func TestReservedLeavesUserKeys(t *testing.T) {
	p := keys.Partition{NS: "app", Queue: "mail", Index: 3}
	for _, key := range []string{
		p.Prefix() + "u:balance",
		p.Prefix() + "u:j:1",
		p.Prefix() + "bal",
		p.Prefix() + "jobs",
		p.Prefix() + "s",
		p.Prefix() + "stats:today",
		p.Tag(),
		"{app:counters}:j:1",
		"{app:mail:x}:j:1",
		"{other:mail:3}:j:1",
		"app:balance",
		"{app:mail:3",
		"balance",
	} {
		if keys.Reserved("app", key) {
			t.Errorf("%q is reserved", key)
		}
	}
}
