package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// FakeDriver is the [Driver] for testkit.Fake: topics are in-memory logs
// and a consumer group is the committed offsets it keeps across fakes. The
// source it returns wraps a new Fake that, once its Run started, is handed
// the topic's records from the group's committed offsets on (with their
// original offsets) and assigned every partition.
type FakeDriver struct {
	mu     sync.Mutex
	topics map[string][][]pipeline.Record // by partition
	groups map[groupTopic]*fakeGroup
}

type groupTopic struct{ group, topic string }

type fakeGroup struct {
	committed map[int32]int64 // merged commits of the fakes that ended
	live      *testkit.Fake   // the running fake, if any
}

// NewFakeDriver returns an empty driver.
func NewFakeDriver() *FakeDriver {
	return &FakeDriver{topics: map[string][][]pipeline.Record{}, groups: map[groupTopic]*fakeGroup{}}
}

// CreateTopic implements Driver.
func (d *FakeDriver) CreateTopic(t *testing.T, topic string, partitions int32) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.topics[topic]; ok {
		t.Fatalf("sourcetest: topic %q exists", topic)
	}
	d.topics[topic] = make([][]pipeline.Record, partitions)
}

// Produce implements Driver.
func (d *FakeDriver) Produce(t *testing.T, topic string, recs ...pipeline.Record) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	parts, ok := d.topics[topic]
	if !ok {
		t.Fatalf("sourcetest: no topic %q", topic)
	}
	for _, r := range recs {
		if r.Partition < 0 || int(r.Partition) >= len(parts) {
			t.Fatalf("sourcetest: %s has no partition %d", topic, r.Partition)
		}
		r.Topic = topic
		r.Offset = int64(len(parts[r.Partition]))
		parts[r.Partition] = append(parts[r.Partition], r)
	}
}

// Committed implements Driver.
func (d *FakeDriver) Committed(_ *testing.T, group, topic string) map[int32]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[int32]int64{}
	g := d.groups[groupTopic{group, topic}]
	if g == nil {
		return out
	}
	for p, c := range g.committed {
		out[p] = c
	}
	if g.live != nil {
		for p := range int32(len(d.topics[topic])) {
			if c := g.live.Committed(topic, p); c >= 0 {
				out[p] = c
			}
		}
	}
	return out
}

// NewSource implements Driver.
func (d *FakeDriver) NewSource(_ *testing.T, group, topic string) pipeline.Source {
	return &fakeSource{d: d, key: groupTopic{group, topic}}
}

// fakeSource is a testkit.Fake joined to a FakeDriver group.
type fakeSource struct {
	d   *FakeDriver
	key groupTopic
}

// Run implements pipeline.Source: it runs a new Fake and, from another
// goroutine once that Fake runs, hands it the records from the group's
// committed offsets and assigns it every partition. When the Fake
// returned, its commits become the group's.
func (s *fakeSource) Run(ctx context.Context, g pipeline.Group) error {
	fake := testkit.NewFake()
	var backlog []pipeline.Record
	var parts []int32
	s.d.mu.Lock()
	logs, ok := s.d.topics[s.key.topic]
	grp := s.d.groups[s.key]
	if grp == nil {
		grp = &fakeGroup{committed: map[int32]int64{}}
		s.d.groups[s.key] = grp
	}
	live := grp.live != nil
	if ok && !live {
		grp.live = fake
		for p, log := range logs {
			parts = append(parts, int32(p))
			from := grp.committed[int32(p)] // 0 when nothing was committed
			for _, r := range log {
				if r.Offset >= from {
					backlog = append(backlog, r)
				}
			}
		}
	}
	s.d.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("sourcetest: no topic %q", s.key.topic)
	case live:
		return fmt.Errorf("sourcetest: the fake driver runs one source of group %q at a time", s.key.group)
	}

	setup := make(chan error, 1)
	go func() {
		var err error
		if len(backlog) > 0 {
			err = fake.SendRecords(backlog...)
		}
		if err == nil {
			// A build error is recorded by the group, which stops Run.
			_ = fake.Assign(s.key.topic, parts...)
		}
		setup <- err
	}()
	err := fake.Run(ctx, g)
	serr := <-setup // the Fake's control methods return ErrStopped once Run returned

	s.d.mu.Lock()
	for _, p := range parts {
		if c := fake.Committed(s.key.topic, p); c >= 0 {
			grp.committed[p] = c
		}
	}
	grp.live = nil
	s.d.mu.Unlock()
	if serr != nil && !errors.Is(serr, testkit.ErrStopped) {
		return fmt.Errorf("sourcetest: feeding the fake: %w", serr)
	}
	return err
}
