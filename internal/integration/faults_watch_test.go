package integration

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCommitWatchFlagsCommitsPastProcessed: the watch the fault tests rely
// on accepts a commit of n once offsets 0..n-1 were processed, rejects one
// with a hole below n, checks each request once however many entities
// kfake asks it about, and notes a request below an earlier one.
func TestCommitWatchFlagsCommitsPastProcessed(t *testing.T) {
	seen := newOffsets(map[int32]int64{0: 10, 1: 10})
	w := &commitWatch{seen: seen, topic: "t", prefix: map[int32]int64{}, highest: map[string]map[int32]int64{}}
	commit := func(p int32, next int64) *kmsg.OffsetCommitRequest {
		req := kmsg.NewPtrOffsetCommitRequest()
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, next
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	for off := range int64(5) {
		seen.add(0, off)
	}
	seen.add(1, 0)
	seen.add(1, 2) // 1 is a hole

	ok := commit(0, 5)
	w.when(ok)
	w.when(ok) // the same request, asked about another entity
	if w.Requests() != 1 || len(w.bad) != 0 {
		t.Fatalf("commit of 5 after 0..4: %d requests, flagged %v; want 1 request, nothing flagged", w.Requests(), w.bad)
	}
	w.when(commit(0, 6))
	w.when(commit(1, 3))
	w.when(commit(1, 11))
	if len(w.bad) != 3 {
		t.Fatalf("flagged %d commits, want 3 (past the processed offsets, over a hole, outside the topic): %v", len(w.bad), w.bad)
	}
	for i, want := range []string{"offset 5 was not processed", "offset 1 was not processed", "outside the topic"} {
		if !strings.Contains(w.bad[i], want) {
			t.Errorf("flag %d = %q, want it to say %q", i, w.bad[i], want)
		}
	}
	w.when(commit(0, 5)) // processed, but below the earlier request of 6
	if len(w.bad) != 3 {
		t.Errorf("a commit at the processed prefix was flagged: %v", w.bad[3:])
	}
	if back := w.regressions(); len(back) != 1 || !strings.Contains(back[0], "commit of 5 after one of 6") {
		t.Errorf("regressions = %q, want the one commit of 5 after 6", back)
	}
}
