package testkit

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluice-go/sluice"
)

// UseOffsetStore makes the Fake consult store at every Assign, as the
// Kafka sources do with Config.OffsetStore: Assign calls store.Claim with
// group and the partitions it assigns, before their graphs are built, and
// each partition the claim names starts at that offset instead of the
// committed one. A Claim error is returned by Assign and nothing is
// assigned. Call it before Run.
func (f *Fake) UseOffsetStore(store sluice.OffsetStore, group string) {
	if f.started.Load() {
		panic("testkit: Fake.UseOffsetStore called after Run started")
	}
	f.store, f.storeGroup = store, group
}

// claim asks the offset store, if any, where list starts.
func (f *Fake) claim(list []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	if f.store == nil || len(list) == 0 {
		return nil, nil
	}
	start, err := f.store.Claim(context.Background(), f.storeGroup, list)
	if err != nil {
		names := make([]string, len(list))
		for i, tp := range list {
			names[i] = fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition)
		}
		return nil, fmt.Errorf("testkit: offset store claim of %s: %w", strings.Join(names, ", "), err)
	}
	return start, nil
}
