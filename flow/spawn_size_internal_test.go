package flow

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/mpack"
	"github.com/sluicehq/sluice/internal/store"
)

// TestSpawnRecordSize: the size Spawn reckons for its list of child IDs
// is the size of their msgpack encoding, with each partition number at
// its widest, across every string and array header size.
func TestSpawnRecordSize(t *testing.T) {
	widest := strconv.Itoa(store.MaxPartitions - 1)
	for _, n := range []int{0, 1, 15, 16, 300, 1<<16 - 1, 1 << 16} {
		for _, local := range []int{1, 20, 26, 27, 250, 251, 1<<16 - 10, 1 << 16} {
			if n > 300 && local > 300 {
				continue // the headers are each checked with the others small
			}
			queue := "q"
			ids := make([]string, n)
			want := listHeadSize(n)
			id := queue + ":" + widest + ":" + strings.Repeat("l", local)
			for i := range ids {
				ids[i] = id
				want += childIDSize(queue, id[len(queue)+1+len(widest)+1:])
			}
			b, err := mpack.Marshal(ids)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != want {
				t.Errorf("%d IDs of %d bytes: reckoned %d bytes, msgpack takes %d", n, len(id), want, len(b))
			}
		}
	}
}
