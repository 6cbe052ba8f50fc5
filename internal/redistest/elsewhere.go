package redistest

import (
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/keys"
)

// Elsewhere returns a key named name in namespace ns whose cluster slot is
// none of the slots of near (a partition's tag, say), so that an effect a
// test writes to it is a foreign one, applied through the outbox, whatever
// slot a random namespace falls on. Without it, one run in 16,384 puts the
// "foreign" key in the partition's own slot and the effect applies in
// place. Keys from one namespace's calls share a slot. ns may not hold a
// brace (NewNamespace's never do): the tag would then not be ns's.
func Elsewhere(ns, name string, near ...string) string {
	if strings.ContainsAny(ns, "{}") {
		panic("redistest.Elsewhere: a namespace with a brace: " + ns)
	}
	for i := 0; ; i++ {
		tag := ns + ":elsewhere"
		if i > 0 {
			tag += strconv.Itoa(i)
		}
		key := "{" + tag + "}:" + name
		if !sharesSlot(key, near) {
			return key
		}
	}
}

func sharesSlot(key string, near []string) bool {
	for _, k := range near {
		if keys.Slot(k) == keys.Slot(key) {
			return true
		}
	}
	return false
}
