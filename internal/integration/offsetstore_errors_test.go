package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// TestOffsetStoreClaimErrorStopsRun: the store fails the claim of the
// first assignment. Run returns an error naming Config.OffsetStore, the
// group and the partitions, wrapping the store's; no graph was built,
// nothing was committed.
func TestOffsetStoreClaimErrorStopsRun(t *testing.T) {
	b := kafkatest.NewBroker(t)
	for _, c := range storeClients() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			const parts = 2
			topic, group := c.names(t, "oserr")
			b.CreateTopic(t, topic, parts)
			b.Fill(t, topic, 10, 8)
			l := &storeLog{}
			errStore := errors.New("store unreachable")
			store := &recordingStore{member: "A", log: l, err: errStore}
			var built atomic.Int64
			build := func(_ *pipeline.Partition, in pipeline.Stream[pipeline.Record]) pipeline.End {
				built.Add(1)
				return stages.Discard(in)
			}
			a := startConsumer(t, "A", c.newSource(t, b, group, topic, store), build)
			err := a.Wait(t)
			if !errors.Is(err, errStore) {
				t.Fatalf("Run = %v, want an error wrapping the store's", err)
			}
			claims := l.claims("A")
			if len(claims) != 1 {
				t.Fatalf("Claim calls %v, want one", claims)
			}
			msg := err.Error()
			want := []string{"Config.OffsetStore", fmt.Sprintf("%q", group)}
			for _, tp := range claims[0] {
				want = append(want, fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition))
			}
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("Run = %q, want it to name %s", msg, w)
				}
			}
			if n := built.Load(); n != 0 {
				t.Errorf("%d graphs built after the claim failed, want none", n)
			}
			if got := b.Committed(t, group, topic); len(got) != 0 {
				t.Errorf("group committed %v after the claim failed, want nothing", got)
			}
		})
	}
}
