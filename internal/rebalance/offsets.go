package rebalance

import (
	"slices"

	"github.com/sluice-go/sluice"
)

// mergeOffsets returns the union of a and b, keeping the highest offset
// of a partition in both.
func mergeOffsets(a, b []sluice.Offset) []sluice.Offset {
	idx := make(map[sluice.TopicPartition]int, len(a)+len(b))
	out := make([]sluice.Offset, 0, len(a)+len(b))
	for _, o := range slices.Concat(a, b) {
		if i, ok := idx[o.TopicPartition]; ok {
			out[i].Next = max(out[i].Next, o.Next)
			continue
		}
		idx[o.TopicPartition] = len(out)
		out = append(out, o)
	}
	return out
}

// validOffsets drops logical (negative) offsets, which are never sent.
func validOffsets(offs []sluice.Offset) []sluice.Offset {
	out := offs[:0:0]
	for _, o := range offs {
		if o.Next >= 0 {
			out = append(out, o)
		}
	}
	return out
}

// filterTPs keeps the offsets of the given partitions.
func filterTPs(offs []sluice.Offset, tps []sluice.TopicPartition) []sluice.Offset {
	keep := make(map[sluice.TopicPartition]bool, len(tps))
	for _, tp := range tps {
		keep[tp] = true
	}
	out := offs[:0:0]
	for _, o := range offs {
		if keep[o.TopicPartition] {
			out = append(out, o)
		}
	}
	return out
}
