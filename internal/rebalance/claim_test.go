package rebalance

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
)

// fakeStore is an OffsetStore recording its calls; answer gives its
// reply (nil: no offset for any partition).
type fakeStore struct {
	calls  [][]TP
	groups []string
	answer func(tps []TP) (map[TP]int64, error)
}

func (s *fakeStore) Claim(_ context.Context, group string, tps []TP) (map[TP]int64, error) {
	s.calls = append(s.calls, slices.Clone(tps))
	s.groups = append(s.groups, group)
	if s.answer == nil {
		return nil, nil
	}
	return s.answer(tps)
}

func newClaimCore(store sluice.OffsetStore) *Core {
	return New(&fakeBackend{}, newFakeGroup(), Options{Settings: Settings{Prefix: "test", GroupConfig: sluice.GroupConfig{Group: "g", OffsetStore: store}}})
}

// Claim asks the store for the partitions not owned yet, once per
// assignment, and not at all when every partition is owned.
func TestClaimAsksForNewPartitionsOnly(t *testing.T) {
	s := &fakeStore{answer: func(tps []TP) (map[TP]int64, error) {
		out := map[TP]int64{}
		for _, tp := range tps {
			out[tp] = 10 + int64(tp.Partition)
		}
		return out, nil
	}}
	c := newClaimCore(s)
	for _, step := range []struct {
		tps       []TP
		wantCall  []TP
		wantStart map[TP]int64
	}{
		{[]TP{tp0}, []TP{tp0}, map[TP]int64{tp0: 10}},
		{[]TP{tp0, tp1, tp2}, []TP{tp1, tp2}, map[TP]int64{tp1: 11, tp2: 12}},
		{[]TP{tp0, tp1, tp2}, nil, nil},
	} {
		calls := len(s.calls)
		start, err := c.Claim(step.tps)
		if err != nil {
			t.Fatalf("Claim(%v) = %v", step.tps, err)
		}
		if !maps.Equal(start, step.wantStart) {
			t.Errorf("Claim(%v) = %v, want %v", step.tps, start, step.wantStart)
		}
		switch {
		case step.wantCall == nil && len(s.calls) != calls:
			t.Errorf("Claim(%v) asked the store for %v; every partition is owned", step.tps, s.calls[calls:])
		case step.wantCall != nil && (len(s.calls) != calls+1 || !slices.Equal(s.calls[calls], step.wantCall)):
			t.Errorf("Claim(%v) made store calls %v, want one for %v", step.tps, s.calls[calls:], step.wantCall)
		}
		c.Assigned(step.tps)
	}
	if !slices.Equal(s.groups, []string{"g", "g"}) {
		t.Errorf("store asked for groups %v, want g twice", s.groups)
	}
}

// Without a store, and once closing, Claim returns nothing and asks
// nobody.
func TestClaimWithoutStoreOrClosing(t *testing.T) {
	if start, err := newClaimCore(nil).Claim([]TP{tp0}); start != nil || err != nil {
		t.Errorf("without a store: Claim = %v, %v; want nil, nil", start, err)
	}
	s := &fakeStore{}
	c := newClaimCore(s)
	c.LoseAll()
	if start, err := c.Claim([]TP{tp0}); start != nil || err != nil || len(s.calls) != 0 {
		t.Errorf("closing: Claim = %v, %v after store calls %v; want nil, nil and none", start, err, s.calls)
	}
}

// A store's error is wrapped in one naming Config.OffsetStore, the group
// and each partition as topic[partition].
func TestClaimErrorNamesStoreGroupAndPartitions(t *testing.T) {
	boom := errors.New("boom")
	c := newClaimCore(&fakeStore{answer: func([]TP) (map[TP]int64, error) { return nil, boom }})
	_, err := c.Claim([]TP{tp0, tp1})
	if !errors.Is(err, boom) {
		t.Fatalf("Claim = %v, want it to wrap the store's error", err)
	}
	for _, want := range []string{"test: Config.OffsetStore", `group "g"`, "in[0]", "in[1]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Claim = %q, want it to contain %q", err, want)
		}
	}
}

// A reply the source cannot act on is an error naming the partition: a
// negative offset, or an offset for a partition the store was not asked
// to claim (this member does not hold it, or owns it already).
func TestClaimRefusesBadReplies(t *testing.T) {
	for name, tc := range map[string]struct {
		reply map[TP]int64
		want  []string
	}{
		"negative offset":     {map[TP]int64{tp0: -1}, []string{"Config.OffsetStore", "offset -1", "in[0]"}},
		"partition not asked": {map[TP]int64{tp0: 3, tp2: 5}, []string{"Config.OffsetStore", "in[2]", "not asked"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClaimCore(&fakeStore{answer: func([]TP) (map[TP]int64, error) { return tc.reply, nil }})
			start, err := c.Claim([]TP{tp0, tp1})
			if err == nil {
				t.Fatalf("Claim = %v, nil; want an error", start)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Claim = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}
