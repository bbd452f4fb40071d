package main

import (
	"strings"
	"testing"
)

// fullRun records every record of l once, as a correct run would.
func fullRun(l layout) *tracker {
	return runOf(l, func(_ int32, o int64, v []byte) (int64, []byte, bool) { return o, v, true })
}

// runOf records each record of l once, at the offset and with the value
// seen returns for it (given its own); a record seen returns false for is
// left out.
func runOf(l layout, seen func(p int32, o int64, v []byte) (int64, []byte, bool)) *tracker {
	tr := newTracker(l)
	for p := range l.partitions {
		for o := range l.count(p) {
			if o, v, ok := seen(int32(p), o, valueOf(int32(p), o, l.valueSize)); ok {
				tr.record(int32(p), o, valueHash(v))
			}
		}
	}
	return tr
}

func TestLayoutSpreadsRecordsLikeTheFill(t *testing.T) {
	l := layout{records: 10, partitions: 4, valueSize: 40}
	want := []int64{3, 3, 2, 2} // record i in partition i%4
	var sum int64
	for p := range l.partitions {
		if got := l.count(p); got != want[p] {
			t.Errorf("count(%d) = %d, want %d", p, got, want[p])
		}
		sum += l.count(p)
	}
	if sum != 10 {
		t.Fatalf("counts sum to %d, want 10", sum)
	}
}

func TestValueHeaderRoundTrips(t *testing.T) {
	for _, c := range []struct {
		p int32
		o int64
	}{{0, 0}, {7, 124999}, {255, 1 << 40}} {
		v := valueOf(c.p, c.o, minValueSize)
		if len(v) != minValueSize {
			t.Fatalf("valueOf(%d, %d) has %d bytes, want %d", c.p, c.o, len(v), minValueSize)
		}
		p, o, ok := parseHeader(v)
		if !ok || p != c.p || o != c.o {
			t.Errorf("parseHeader(%q) = %d, %d, %v; want %d, %d, true", v, p, o, ok, c.p, c.o)
		}
	}
	for _, bad := range []string{"", "x/1;", "1/;", "1/2", "1;2/", "/1;"} {
		if _, _, ok := parseHeader([]byte(bad)); ok {
			t.Errorf("parseHeader(%q) accepted a value without a p/o; header", bad)
		}
	}
	if valueHash(valueOf(1, 2, 100)) == valueHash(valueOf(2, 1, 100)) {
		t.Error("records 1/2 and 2/1 have the same value hash: the hash sums would not tell them apart")
	}
}

func TestCheckStatsAcceptsACompleteRun(t *testing.T) {
	l := layout{records: 1000, partitions: 3, valueSize: 50}
	if err := checkStats(l, l.expectedHashes(), fullRun(l).stats()); err != nil {
		t.Fatal(err)
	}
}

func TestCheckStatsNamesWhatIsWrong(t *testing.T) {
	l := layout{records: 300, partitions: 3, valueSize: 50}
	want := l.expectedHashes()
	h := func(p int32, o int64) uint64 { return valueHash(valueOf(p, o, l.valueSize)) }
	for _, c := range []struct {
		name  string
		spoil func(tr *tracker) *tracker
		want  string
	}{
		{"a gap", func(*tracker) *tracker {
			return runOf(l, func(p int32, o int64, v []byte) (int64, []byte, bool) { return o, v, p != 1 || o != 42 })
		}, "partition 1: 99 distinct offsets of 100 (1 missing)"},
		{"a duplicate", func(tr *tracker) *tracker {
			tr.record(2, 7, h(2, 7))
			return tr
		}, "partition 2: 1 duplicates"},
		{"a duplicate hiding a gap", func(*tracker) *tracker {
			return runOf(l, func(p int32, o int64, v []byte) (int64, []byte, bool) {
				if p == 0 && o == 99 {
					return 98, valueOf(p, 98, l.valueSize), true // the count stays right
				}
				return o, v, true
			})
		}, "partition 0: 1 duplicates"},
		{"an offset past the end", func(tr *tracker) *tracker {
			tr.record(0, 100, 0)
			return tr
		}, "partition 0: 1 offsets at or past its end 100"},
		{"a changed value", func(*tracker) *tracker {
			return runOf(l, func(p int32, o int64, v []byte) (int64, []byte, bool) {
				if p == 2 && o == 5 {
					v[len(v)-1] ^= 1
				}
				return o, v, true
			})
		}, "partition 2: value hash sum"},
		{"nothing from a partition", func(*tracker) *tracker {
			return runOf(l, func(p int32, o int64, v []byte) (int64, []byte, bool) { return o, v, p == 0 })
		}, "partition 1: 0 distinct offsets of 100 (100 missing)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkStats(l, want, c.spoil(fullRun(l)).stats())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("checkStats = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestTrackerRefusesUnknownPartitions(t *testing.T) {
	tr := newTracker(layout{records: 10, partitions: 2, valueSize: 40})
	if tr.record(2, 0, 0) || tr.record(-1, 0, 0) {
		t.Fatal("record accepted a partition outside the layout")
	}
	if n := tr.total(); n != 0 {
		t.Fatalf("total = %d after refused records, want 0", n)
	}
}

func TestTrackerStatsMinMax(t *testing.T) {
	tr := newTracker(layout{records: 400, partitions: 2, valueSize: 40})
	for _, o := range []int64{70, 3, 199, 64} {
		tr.record(1, o, 1)
	}
	s := tr.stats()
	if s[1].Min != 3 || s[1].Max != 199 || s[1].Distinct != 4 || s[1].Count != 4 || s[1].Hash != 4 {
		t.Fatalf("partition 1 stats %+v, want min 3, max 199, 4 distinct, count 4, hash 4", s[1])
	}
	if s[0].Min != -1 || s[0].Max != -1 || s[0].Distinct != 0 {
		t.Fatalf("empty partition 0 stats %+v, want min and max -1", s[0])
	}
}

func TestCheckCommittedWantsEveryPartitionAtItsEnd(t *testing.T) {
	l := layout{records: 30, partitions: 3, valueSize: 40}
	end := map[int32]int64{0: 10, 1: 10, 2: 10}
	if err := checkCommitted(l, map[int32]int64{0: 10, 1: 10, 2: 10}, end); err != nil {
		t.Fatal(err)
	}
	err := checkCommitted(l, map[int32]int64{0: 10, 2: 9}, end)
	if err == nil {
		t.Fatal("checkCommitted accepted a missing and a short commit")
	}
	for _, want := range []string{"partition 1: nothing committed, end offset 10", "partition 2: committed 9, end offset 10"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("checkCommitted = %v, want it to say %q", err, want)
		}
	}
	err = checkCommitted(l, map[int32]int64{0: 11, 1: 10, 2: 10}, map[int32]int64{0: 11, 1: 10, 2: 10})
	if err == nil || !strings.Contains(err.Error(), "partition 0: end offset 11, want 10") {
		t.Fatalf("checkCommitted = %v, want the grown end offset of partition 0 named", err)
	}
}

func TestDeliveriesCommitOnlyContiguousPrefixes(t *testing.T) {
	d := newDeliveries(layout{records: 8, partitions: 2, valueSize: 40}) // 4 records each
	steps := []struct {
		p    int32
		o    int64
		want []int64
	}{
		{0, 1, []int64{0, 0}}, // 0 not delivered yet: nothing committable
		{0, 0, []int64{2, 0}},
		{1, 3, []int64{2, 0}},
		{0, 0, []int64{2, 0}}, // a second report changes nothing
		{1, 0, []int64{2, 1}},
		{1, 1, []int64{2, 2}},
		{1, 2, []int64{2, 4}},
		{0, 3, []int64{2, 4}},
	}
	for i, s := range steps {
		if last := d.mark(s.p, s.o); last {
			t.Fatalf("step %d: mark reported the last delivery with records missing", i)
		}
		if got := d.committable(); got[0] != s.want[0] || got[1] != s.want[1] {
			t.Fatalf("step %d (mark %d/%d): committable %v, want %v", i, s.p, s.o, got, s.want)
		}
	}
	if !d.mark(0, 2) {
		t.Fatal("the last delivery was not reported as last")
	}
	select {
	case <-d.done:
	default:
		t.Fatal("done not closed after every delivery")
	}
	if got := d.committable(); got[0] != 4 || got[1] != 4 {
		t.Fatalf("committable %v at the end, want [4 4]", got)
	}
}
