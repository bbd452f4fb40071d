package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// monitor samples the group every cluster.pollEvery for the whole
// scenario. It
// remembers when each member (client id) was last seen owning each
// partition (when a process is killed, its uncommitted work can only be on
// partitions it owned lately), and every change of the group's state and
// membership, to explain slow recoveries.
type monitor struct {
	c    *cluster
	stop context.CancelFunc
	done <-chan struct{}

	mu      sync.Mutex
	last    groupState
	held    map[string]map[int32]time.Time
	changes []change
}

// change is the group as it became at one moment.
type change struct {
	at   time.Time
	what string // state and assignment
}

func startMonitor(c *cluster) *monitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor{c: c, stop: cancel, held: map[string]map[int32]time.Time{}}
	m.sample()
	m.done = tick(ctx, c.pollEvery, func() { m.sample() })
	return m
}

func (m *monitor) close() {
	m.stop()
	<-m.done
}

// sample looks at the group now and returns what it saw.
func (m *monitor) sample() groupState {
	s := m.c.group()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = s
	for id, ps := range s.members {
		if m.held[id] == nil {
			m.held[id] = map[int32]time.Time{}
		}
		for _, p := range ps {
			m.held[id][p] = s.at
		}
	}
	if what := s.String(); len(m.changes) == 0 || m.changes[len(m.changes)-1].what != what {
		m.changes = append(m.changes, change{at: s.at, what: what})
	}
	return s
}

// heldSince returns the partitions member id was seen to own at or after
// since.
func (m *monitor) heldSince(id string, since time.Time) []int32 {
	m.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p, last := range m.held[id] {
		if !last.Before(since) {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// history renders the group's changes from since on, times relative to
// since.
func (m *monitor) history(since time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	for _, c := range m.changes {
		if !c.at.Before(since) {
			lines = append(lines, fmt.Sprintf("+%.2fs %s", c.at.Sub(since).Seconds(), c.what))
		}
	}
	return strings.Join(lines, "\n")
}

// waitUntil samples the group until cond holds or the deadline passes;
// on timeout the error names what, why cond last said no, and the state.
func (m *monitor) waitUntil(ctx context.Context, deadline time.Time, what string, cond func(groupState) (bool, string)) (groupState, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return pollGroup(ctx, m.c.pollEvery, what, func(context.Context) groupState { return m.sample() }, cond)
}

// pollGroup looks at the group (look) every every until cond holds, and
// returns what it saw last; once ctx is done the error names what, why
// cond last said no, and that state.
func pollGroup(ctx context.Context, every time.Duration, what string, look func(context.Context) groupState, cond func(groupState) (bool, string)) (groupState, error) {
	start := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s := look(ctx)
		ok, why := cond(s)
		if ok {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("%s: not reached after %v (%v): %s; group %v",
				what, time.Since(start).Round(time.Millisecond), context.Cause(ctx), why, s)
		case <-t.C:
		}
	}
}

// settled reports whether the group is stable with exactly the live
// members and every partition assigned to exactly one of them; if not,
// why.
func settled(s groupState, live []string, partitions int32) (bool, string) {
	if s.state != "Stable" {
		return false, fmt.Sprintf("state %q", s.state)
	}
	if got := slices.Sorted(maps.Keys(s.members)); !slices.Equal(got, live) {
		return false, fmt.Sprintf("members %v, want the live processes %v", got, live)
	}
	owners := map[int32][]string{}
	for id, ps := range s.members {
		for _, p := range ps {
			owners[p] = append(owners[p], id)
		}
	}
	var problems []string
	for p := range partitions {
		switch len(owners[p]) {
		case 1:
		case 0:
			problems = append(problems, fmt.Sprintf("partition %d unassigned", p))
		default:
			problems = append(problems, fmt.Sprintf("partition %d assigned to %v", p, owners[p]))
		}
	}
	if len(problems) > 0 {
		return false, strings.Join(problems, ", ")
	}
	return true, ""
}
