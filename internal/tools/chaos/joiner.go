package main

import (
	"context"
	"fmt"
	"time"
)

// killJoinerOnceJoined restarts slot and SIGKILLs the new incarnation as
// soon as the broker has answered its JoinGroup in the rebalance's last
// round (joinedPastPreparing): killed earlier, kfake mishandles it (see
// docs/reliability.md). A KIP-848 group has no such state, so there it is
// killed once it is a member. Then the group must recover without it
// within the recovery timeout, and the slot is started again.
func (s *scenario) killJoinerOnceJoined(ctx context.Context, slot int) error {
	if err := s.termAndRecover(ctx, slot, "restart before killing the joiner"); err != nil {
		return err
	}
	if err := s.start(slot); err != nil {
		return err
	}
	joining := s.live[slot]
	// The rounds of the joiner's rebalance: cooperative-sticky needs a
	// second one to hand the joiner partitions.
	r := joinRounds{id: joining.name, need: 1}
	switch s.protocol {
	case "cooperative-sticky":
		r.need = 2
	case "consumer":
		r.need = 0
	}
	g, err := s.pollFast(ctx, joining.name+" got its JoinGroup reply in the last round", func(g groupState) (bool, string) {
		r.observe(g)
		return r.joinedPastPreparing(g)
	})
	if err != nil {
		s.violate("%v", err)
		return errAbort
	}
	why := fmt.Sprintf("once joined, group %v", g)
	if r.need > 0 {
		why = fmt.Sprintf("once joined, %d of %d rounds answered, group %v", r.answered, r.need, g)
	}
	t := time.Now()
	s.kill(joining, why)
	if err := s.recovered(ctx, "SIGKILL of "+joining.name+" once joined", t); err != nil {
		return err
	}
	return s.startAndRecover(ctx, slot)
}

// pollFast describes the group every millisecond (or as fast as the
// broker answers), not every pollEvery, until cond holds: the sync phase
// of a classic rebalance lasts a few milliseconds, and a kill should land
// in it or right after, not a whole poll later. It reads the members
// only, not the commits. The monitor samples on its own meanwhile.
func (s *scenario) pollFast(ctx context.Context, what string, cond func(groupState) (bool, string)) (groupState, error) {
	ctx, cancel := context.WithTimeout(ctx, s.set.recoveryTimeout)
	defer cancel()
	return pollGroup(ctx, time.Millisecond, what, s.c.describe, cond)
}

// joinRounds counts, from successive looks at a classic group, the join
// phases of a rebalance that the member id took part in and the broker
// answered: each time the group leaves PreparingRebalance with id a
// member, every member has its JoinGroup reply of a new generation.
// DescribeGroups tells no generation, so the rounds are counted; a
// joiner first seen past PreparingRebalance has had one answered.
type joinRounds struct {
	id        string
	need      int  // the rounds of the rebalance: 1 eager, 2 cooperative, 0 KIP-848 (no JoinGroup)
	answered  int  // join phases answered since id became a member
	member    bool // id was seen a member
	preparing bool // the last look saw the group in PreparingRebalance
}

// observe takes one look at the group into account.
func (r *joinRounds) observe(g groupState) {
	if g.err != nil {
		return
	}
	if _, ok := g.members[r.id]; !ok {
		return
	}
	prep := g.state == "PreparingRebalance"
	switch {
	case !r.member && !prep:
		r.answered = 1
	case r.member && r.preparing && !prep:
		r.answered++
	}
	r.member, r.preparing = true, prep
}

// joinedPastPreparing reports whether the broker has answered id's
// JoinGroup of the rebalance's last round: id is a member, the group is
// not preparing a rebalance, and id took part in the rebalance's rounds
// or already owns partitions (which only the last round gives a joiner
// of a group that owned them all: the leader's SyncGroup assigns them);
// and the group is not stable with id owning nothing.
// Killed before its JoinGroup reply, kfake keeps the joiner forever.
// Killed before the last round of a cooperative rebalance, its session
// timer and those of the live members were armed at about the same
// moment (kfake's handleSync answers a follower that syncs after the
// leader without re-arming its timer), the live members then wait in
// JoinGroup for the next round, and kfake expires whichever timer fires
// first, often a live member's, which Kafka never does
// (docs/reliability.md). Killed in the last round, the live members
// heartbeat again before the joiner expires.
func (r *joinRounds) joinedPastPreparing(g groupState) (bool, string) {
	ps, ok := g.members[r.id]
	switch {
	case g.err != nil:
		return false, g.err.Error()
	case !ok:
		return false, "not a member yet"
	case g.state == "PreparingRebalance":
		return false, "a member, waiting for its JoinGroup reply"
	case r.answered < r.need && len(ps) == 0:
		return false, fmt.Sprintf("%d of the rebalance's %d rounds answered, waiting for the last", r.answered, r.need)
	case g.state == "Stable" && len(ps) == 0:
		return false, "stable, owning nothing yet"
	}
	return true, ""
}
