package main

import (
	"errors"
	"fmt"
)

// maxProblems bounds the problems one check lists (a broken run would
// otherwise name every partition).
const maxProblems = 8

// checkStats compares what a run consumed with the layout: every
// partition must hold exactly its records, each once (no duplicate, no
// gap, nothing out of range), with the expected value hash sum. want is
// layout.expectedHashes(). The error names each partition that differs.
func checkStats(l layout, want []uint64, got []PartStats) error {
	var errs []error
	bad := func(format string, args ...any) {
		if len(errs) < maxProblems {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	if len(got) != l.partitions {
		bad("stats for %d partitions, want %d", len(got), l.partitions)
	}
	for i, s := range got {
		if int(s.Partition) != i || i >= l.partitions {
			bad("stats entry %d is for partition %d", i, s.Partition)
			continue
		}
		n := l.count(i)
		switch {
		case s.Dups > 0:
			bad("partition %d: %d duplicates", i, s.Dups)
		case s.OutOfRange > 0:
			bad("partition %d: %d offsets at or past its end %d", i, s.OutOfRange, n)
		case s.Distinct != n:
			bad("partition %d: %d distinct offsets of %d (%d missing)", i, s.Distinct, n, n-s.Distinct)
		case s.Count != n:
			bad("partition %d: %d records, want %d", i, s.Count, n)
		case n > 0 && (s.Min != 0 || s.Max != n-1):
			bad("partition %d: offsets %d..%d, want 0..%d", i, s.Min, s.Max, n-1)
		case s.Hash != want[i]:
			bad("partition %d: value hash sum %#x, want %#x (a value differs from what was produced)", i, s.Hash, want[i])
		}
	}
	return errors.Join(errs...)
}

// checkCommitted compares a group's committed offsets with the input
// topic's end offsets: every partition must be committed exactly at its
// end. Partitions missing from committed are reported as such.
func checkCommitted(l layout, committed map[int32]int64, end map[int32]int64) error {
	var errs []error
	for p := range l.partitions {
		e, ok := end[int32(p)]
		if !ok {
			errs = append(errs, fmt.Errorf("partition %d: no end offset", p))
			continue
		}
		if e != l.count(p) {
			errs = append(errs, fmt.Errorf("partition %d: end offset %d, want %d (the input topic changed)", p, e, l.count(p)))
		}
		c, ok := committed[int32(p)]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("partition %d: nothing committed, end offset %d", p, e))
		case c != e:
			errs = append(errs, fmt.Errorf("partition %d: committed %d, end offset %d", p, c, e))
		}
		if len(errs) >= maxProblems {
			break
		}
	}
	return errors.Join(errs...)
}
