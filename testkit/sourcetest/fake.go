package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/testkit"
)

// FakeDriver is the [Driver] (and [Evicter]) for testkit.Fake: topics are
// in-memory logs and a consumer group is a small coordinator. Each source
// it returns runs a new Fake that, once its Run started, joins the group:
// it is handed the topic's records and the group splits the partitions
// among its running members (partition p to the (p mod n)th member, in
// join order), moving them as Kafka's coordinator does: revoked from their
// old owner (its final offsets committed to the group), then assigned to
// the new one from the group's committed offset. A member that stops gives
// its partitions to the others the same way.
type FakeDriver struct {
	memBroker // CreateTopic and Produce
	groups    map[groupTopic]*fakeGroup
}

type groupTopic struct{ group, topic string }

// fakeGroup is one consumer group of one topic.
type fakeGroup struct {
	moving sync.Mutex // held while partitions move between members

	// under FakeDriver.mu
	committed map[int32]int64 // commits of partitions as of their last move
	members   []*fakeMember   // running members, in join order
	evicted   bool
}

// fakeMember is one running source of a group.
type fakeMember struct {
	fake  *testkit.Fake
	owned map[int32]bool // under FakeDriver.mu
}

// NewFakeDriver returns an empty driver.
func NewFakeDriver() *FakeDriver {
	return &FakeDriver{memBroker: newMemBroker(), groups: map[groupTopic]*fakeGroup{}}
}

// Committed implements Driver: for each partition, its owner's commits
// while a member owns it, else what the group kept when it last moved.
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
	for _, m := range g.members {
		for p := range m.owned {
			if c := m.fake.Committed(topic, p); c >= 0 {
				out[p] = c
			}
		}
	}
	return out
}

// NewSource implements Driver.
func (d *FakeDriver) NewSource(_ *testing.T, group, topic string) sluice.Source {
	return &fakeSource{d: d, key: groupTopic{group, topic}}
}

// Evict implements Evicter: every member loses the partitions it owns
// (Fake.Lose) and nobody owns any until readmit.
func (d *FakeDriver) Evict(t *testing.T, group, topic string) (readmit func()) {
	t.Helper()
	key := groupTopic{group, topic}
	d.mu.Lock()
	g := d.groups[key]
	d.mu.Unlock()
	if g == nil {
		t.Fatalf("sourcetest: Evict: group %q of %q never ran", group, topic)
	}
	g.moving.Lock()
	d.mu.Lock()
	g.evicted = true
	d.mu.Unlock()
	d.move(key, g, true)
	g.moving.Unlock()
	return func() {
		g.moving.Lock()
		defer g.moving.Unlock()
		d.mu.Lock()
		g.evicted = false
		d.mu.Unlock()
		d.move(key, g, false)
	}
}

// move gives every partition of the topic to its target member (none while
// the group is evicted): first taking partitions away from members that
// should not own them (revoked, or lost when lose is set), keeping their
// commits, then assigning the rest from the group's commits. The caller
// holds g.moving. A member whose Fake stopped answers ErrStopped; its
// commits are final by then, so they are kept all the same.
func (d *FakeDriver) move(key groupTopic, g *fakeGroup, lose bool) {
	d.mu.Lock()
	parts := int32(len(d.topics[key.topic]))
	members := slices.Clone(g.members)
	target := func(p int32) *fakeMember {
		if g.evicted || len(members) == 0 {
			return nil
		}
		return members[int(p)%len(members)]
	}
	takes := map[*fakeMember][]int32{}
	for _, m := range members {
		for p := range m.owned {
			if target(p) != m {
				takes[m] = append(takes[m], p)
			}
		}
	}
	d.mu.Unlock()

	for m, ps := range takes {
		slices.Sort(ps)
		if lose {
			_ = m.fake.Lose(key.topic, ps...)
		} else {
			_ = m.fake.Revoke(key.topic, ps...)
		}
		d.mu.Lock()
		for _, p := range ps {
			delete(m.owned, p)
			if c := m.fake.Committed(key.topic, p); c >= 0 {
				g.committed[p] = c
			}
		}
		d.mu.Unlock()
	}

	for _, m := range members {
		var gets []int32
		from := map[int32]int64{}
		d.mu.Lock()
		for p := range parts {
			if target(p) == m && !m.owned[p] {
				gets = append(gets, p)
				if c, ok := g.committed[p]; ok {
					from[p] = c
				}
			}
		}
		d.mu.Unlock()
		if len(gets) == 0 {
			continue
		}
		for _, p := range gets {
			if c, ok := from[p]; ok {
				_ = m.fake.SetCommitted(key.topic, p, c)
			}
		}
		// A build error is recorded by the group, which stops Run; a
		// member that stopped owns nothing.
		if err := m.fake.Assign(key.topic, gets...); errors.Is(err, testkit.ErrStopped) {
			continue
		}
		d.mu.Lock()
		for _, p := range gets {
			m.owned[p] = true
		}
		d.mu.Unlock()
	}
}

// fakeSource is a testkit.Fake joined to a FakeDriver group.
type fakeSource struct {
	d   *FakeDriver
	key groupTopic
}

// Run implements sluice.Source: it runs a new Fake and, from another
// goroutine once that Fake runs, hands it every record of the topic and
// joins the group (partitions move to it). When the Fake returned, the
// member leaves the group and its partitions move to the others.
func (s *fakeSource) Run(ctx context.Context, g sluice.Group) error {
	d := s.d
	d.mu.Lock()
	logs, ok := d.topics[s.key.topic]
	var backlog []sluice.Record
	for _, log := range logs {
		backlog = append(backlog, log...)
	}
	grp := d.groups[s.key]
	if grp == nil && ok {
		grp = &fakeGroup{committed: map[int32]int64{}}
		d.groups[s.key] = grp
	}
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("sourcetest: no topic %q", s.key.topic)
	}

	m := &fakeMember{fake: testkit.NewFake(), owned: map[int32]bool{}}
	setup := make(chan error, 1)
	go func() {
		var err error
		if len(backlog) > 0 {
			err = m.fake.SendRecords(backlog...)
		}
		if err == nil {
			grp.moving.Lock()
			d.mu.Lock()
			grp.members = append(grp.members, m)
			d.mu.Unlock()
			d.move(s.key, grp, false)
			grp.moving.Unlock()
		}
		setup <- err
	}()
	err := m.fake.Run(ctx, g)
	serr := <-setup // the Fake's control methods return ErrStopped once Run returned

	grp.moving.Lock()
	d.mu.Lock()
	for p := range m.owned {
		if c := m.fake.Committed(s.key.topic, p); c >= 0 {
			grp.committed[p] = c
		}
	}
	clear(m.owned)
	if i := slices.Index(grp.members, m); i >= 0 {
		grp.members = slices.Delete(grp.members, i, i+1)
	}
	d.mu.Unlock()
	d.move(s.key, grp, false)
	grp.moving.Unlock()
	if serr != nil && !errors.Is(serr, testkit.ErrStopped) {
		return fmt.Errorf("sourcetest: feeding the fake: %w", serr)
	}
	return err
}
