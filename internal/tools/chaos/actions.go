package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-go/sluice/sink/confluent"
)

// args are the command line of every cmd/example process; the supervisor
// adds --client-id.
func (s *scenario) args() []string {
	a := []string{
		"--brokers", s.c.b.Addr(), "--group", groupName,
		"--input", inputTopic, "--output", outputTopic, "--dlq", deadTopic,
		"--metrics-addr", "", "--workers", fmt.Sprint(s.set.workers),
		"--client", s.client, "--group-protocol", s.protocol, "--drain-timeout", s.set.drainTimeout.String(), "-v",
	}
	if s.protocol != "consumer" { // KIP-848: the broker's session timeout (startCluster)
		a = append(a, "--session-timeout", s.set.sessionTimeout.String())
	}
	if s.set.exactlyOnce {
		a = append(a, "--exactly-once")
	}
	if s.set.sink == sinkPostgres {
		a = append(a, "--sink", "postgres", "--postgres-dsn", s.dsn) // --postgres-mode exactly-once, --postgres-table events
	}
	return a
}

// start starts the next incarnation of slot.
func (s *scenario) start(slot int) error {
	s.inc[slot]++
	p, err := s.sup.start(s.logDir, slot, s.inc[slot], s.args())
	if err != nil {
		return err
	}
	s.live[slot] = p
	s.all = append(s.all, p)
	if s.set.verbose {
		s.logf("started %s (pid %d)", p.name, p.pid)
	}
	return nil
}

// terminate sends SIGTERM to every process of ps at once and waits for
// each to exit 0 within drainTimeout+closeBound. A process that does not is
// a violation, and so is a hang: the process is then SIGKILLed (with a
// kill window, so the check of the topics stays exact). Either way the
// processes are gone when it returns and the scenario goes on.
func (s *scenario) terminate(ps []*proc, why string) {
	bound := s.set.drainTimeout + s.set.closeBound
	for _, p := range ps {
		p.send(syscall.SIGTERM)
	}
	for _, p := range ps {
		_, sent := p.signalledWith()
		select {
		case <-p.done:
		case <-time.After(time.Until(sent.Add(bound))):
			s.violate("%s (pid %d, %s) did not exit within %v of SIGTERM (%s); SIGKILLed it. Last log lines:\n%s",
				p.name, p.pid, s.protocol, bound, why, p.logTail(15))
			s.kill(p, "SIGKILL after a shutdown hang")
			continue
		}
		if line, ok := s.abortedOnItsOwn(p); ok { // it had exited before the signal
			s.noteAbort(p, line)
			continue
		}
		took := p.exitedAt().Sub(sent)
		if took > s.res.slowestShutdown {
			s.res.slowestShutdown, s.res.slowestShutdownWho = took, p.name
		}
		delete(s.live, p.slot)
		if !p.exitedCleanly() {
			s.violate("%s (pid %d, %s) answered SIGTERM (%s) with %s after %v, want exit 0. Last log lines:\n%s",
				p.name, p.pid, s.protocol, why, p.exit(), took.Round(time.Millisecond), p.logTail(15))
			continue
		}
		s.logf("%s: SIGTERM (%s) -> %s in %v", p.name, why, p.exit(), took.Round(time.Millisecond))
	}
}

// kill SIGKILLs p. Its uncommitted work may be redone by the next owner:
// for every partition p owned lately, offsets from the committed offset
// before the kill to the high watermark just after it form a kill window.
// Lately: within a drain timeout and a second before the kill, as a
// partition the broker already moved may still be draining in p, or
// still after it, as the broker learns of the death only later. Each
// look at the broker takes a few milliseconds on Apache Kafka, so what
// bounds the window is read on the side of the kill that makes it wider:
// commits before, the high watermark and the owners after.
func (s *scenario) kill(p *proc, why string) {
	since := time.Now().Add(-s.set.drainTimeout - time.Second)
	g := s.mon.sample()
	now := time.Now()
	p.send(syscall.SIGKILL)
	hw, hwErr := s.c.highWatermarks(context.Background(), inputTopic)
	held := s.mon.heldSince(p.name, since)
	if g.err != nil || hwErr != nil {
		s.violate("the kill window of %s: the broker did not answer (commits: %v; high watermarks: %v); the window covers every offset",
			p.name, g.err, hwErr)
	}
	for _, part := range held {
		w := window{from: g.commits[part], to: math.MaxInt64, at: now, cause: "SIGKILL " + p.name}
		if h, ok := hw[part]; ok {
			w.to = h
		}
		s.windows[part] = append(s.windows[part], w)
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		s.violate("%s (pid %d) still not reaped 5s after SIGKILL", p.name, p.pid)
	}
	if line, ok := s.abortedOnItsOwn(p); ok {
		s.noteAbort(p, line)
		return
	}
	delete(s.live, p.slot)
	s.logf("%s: SIGKILL (%s) -> %s; it owned partitions %v lately%s", p.name, why, p.exit(), held, s.killedTransaction(p, now))
}

// killedTransaction describes, in exactly-once mode, the transaction the
// SIGKILL left open: the broker keeps it open until its timeout, and
// read_committed readers of its partitions wait for it meanwhile. It
// counts the kills that left one (result.killsInTxn).
func (s *scenario) killedTransaction(p *proc, killed time.Time) string {
	if !s.set.exactlyOnce {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := s.c.transaction(ctx, transactionalID(p.name))
	if err != nil {
		return fmt.Sprintf("; its transaction: %v", err)
	}
	if t.state != "" {
		s.res.killsInTxn++
		s.txns.watch(s.c, transactionalID(p.name), killed)
	}
	return "; it left " + t.String()
}

// recovered waits until the group owns and consumes every partition again
// after what happened at since: stable, with exactly the live processes as
// members and every partition assigned once (as the broker sees it), and
// then every partition's committed offset moving on (or already at the
// high watermark). The time from since is a recovery time. Timing out is
// a violation that aborts the scenario.
//
// With a classic group, a member killed while a rebalance is under way is
// dropped by kfake only when the rebalance times out (the rebalance
// timeout is librdkafka's max.poll.interval.ms, which the source derives
// from the drain timeout), not at its session timeout as Kafka also does:
// recovery from a kill during a rebalance is bounded by that timeout.
func (s *scenario) recovered(ctx context.Context, after string, since time.Time) error {
	if len(s.live) == 0 {
		return nil
	}
	deadline := since.Add(s.set.recoveryTimeout)
	what := fmt.Sprintf("recovery after %s", after)
	g, err := s.mon.waitUntil(ctx, deadline, what+": group settled", func(g groupState) (bool, string) {
		s.restartAborted()
		return settled(g, s.liveNames(), s.set.partitions)
	})
	if err != nil {
		s.violate("%v; the group meanwhile:\n%s", err, s.mon.history(since))
		return errAbort
	}
	settledIn := time.Since(since)
	base := g.commits
	hw, err := s.c.highWatermarks(ctx, inputTopic)
	if err != nil {
		s.violate("%s: %v", what, err)
		return errAbort
	}
	_, err = s.mon.waitUntil(ctx, deadline, what+": every partition consuming", func(g groupState) (bool, string) {
		s.restartAborted()
		var idle []string
		for p := range s.set.partitions {
			if g.commits[p] <= base[p] && base[p] < hw[p] {
				idle = append(idle, fmt.Sprintf("partition %d still committed at %d (high watermark %d then) owned by %s",
					p, g.commits[p], hw[p], owner(g, p)))
			}
		}
		return len(idle) == 0, strings.Join(idle, ", ")
	})
	if err != nil {
		s.violate("%v", err)
		return errAbort
	}
	took := time.Since(since)
	if took > s.res.slowestRecovery {
		s.res.slowestRecovery, s.res.slowestRecoveryWhy = took, after
	}
	s.logf("recovered after %s in %v (settled in %v)", after, took.Round(time.Millisecond), settledIn.Round(time.Millisecond))
	if slow, bound := s.slowRecovery(); took > slow {
		s.res.slow = append(s.res.slow, fmt.Sprintf("slow recovery after %s: %v (over %s); the group meanwhile:\n%s",
			after, took.Round(time.Millisecond), bound, s.mon.history(since)))
	}
	return nil
}

// slowRecovery is the recovery time past which the summary prints the
// group's history, and what it is: the session timeout plus 3s. In
// exactly-once mode, the new owner of a partition whose killed owner had
// sent its offsets to the open transaction (TxnOffsetCommit, just before
// EndTxn) gets UNSTABLE_OFFSET_COMMIT from its offset fetch until the
// broker aborts that transaction at its timeout, counted from the
// transaction's start: the bound is the longer of the two timeouts plus
// 3s.
func (s *scenario) slowRecovery() (time.Duration, string) {
	if s.set.exactlyOnce && confluent.DefaultTransactionTimeout > s.set.sessionTimeout {
		return confluent.DefaultTransactionTimeout + 3*time.Second, "the transaction timeout + 3s"
	}
	return s.set.sessionTimeout + 3*time.Second, "session timeout + 3s"
}

func owner(g groupState, p int32) string {
	for id, ps := range g.members {
		if slices.Contains(ps, p) {
			return id
		}
	}
	return "nobody"
}

// unexpectedExits reports processes that exited although nobody signalled
// them: a violation that aborts the scenario (their partitions get a kill
// window from offset 0, since when they died is known only roughly).
func (s *scenario) unexpectedExits() error {
	s.restartAborted()
	var crashed bool
	for _, p := range s.liveProcs() {
		select {
		case <-p.done:
		default:
			continue
		}
		if sig, _ := p.signalledWith(); sig != 0 {
			continue
		}
		crashed = true
		delete(s.live, p.slot)
		hw, err := s.c.highWatermarks(context.Background(), inputTopic)
		if err != nil {
			s.violate("the crash window of %s: %v; the window covers every offset", p.name, err)
		}
		for _, part := range s.mon.heldSince(p.name, p.started) {
			w := window{from: 0, to: math.MaxInt64, at: p.exitedAt(), cause: "crash of " + p.name}
			if h, ok := hw[part]; ok {
				w.to = h
			}
			s.windows[part] = append(s.windows[part], w)
		}
		s.violate("%s (pid %d, %s) exited on its own (%s) %v after it started. Last log lines:\n%s",
			p.name, p.pid, s.protocol, p.exit(), p.exitedAt().Sub(p.started).Round(time.Millisecond), p.logTail(15))
	}
	if crashed {
		return errAbort
	}
	return nil
}

// do runs one step of the plan.
func (s *scenario) do(ctx context.Context, st step) error {
	switch st.kind {
	case termRestart:
		s.res.restarts++
		return s.termThenStart(ctx, st.slot)
	case killRestart:
		s.res.kills++
		t := time.Now()
		p := s.live[st.slot]
		s.kill(p, "planned")
		if err := s.recovered(ctx, "SIGKILL of "+p.name, t); err != nil {
			return err
		}
		return s.startAndRecover(ctx, st.slot)
	case killInRebalance:
		s.res.restarts++
		s.res.kills++
		if err := s.termAndRecover(ctx, st.slot, "restart before a kill in the rebalance"); err != nil {
			return err
		}
		if err := s.start(st.slot); err != nil {
			return err
		}
		joining := s.live[st.slot]
		g, err := s.mon.waitUntil(ctx, time.Now().Add(s.set.recoveryTimeout), joining.name+" joins the group",
			func(g groupState) (bool, string) { _, ok := g.members[joining.name]; return ok, "not a member yet" })
		if err != nil {
			s.violate("%v", err)
			return errAbort
		}
		victim := s.live[st.victim]
		t := time.Now()
		s.kill(victim, fmt.Sprintf("while %s joins, group %v", joining.name, g))
		if err := s.recovered(ctx, "SIGKILL of "+victim.name+" during the rebalance", t); err != nil {
			return err
		}
		return s.startAndRecover(ctx, st.victim)
	case killJoinerJoined:
		s.res.restarts++
		s.res.kills++
		return s.killJoinerOnceJoined(ctx, st.slot)
	case stopAll:
		s.res.stopAlls++
		s.terminate(s.liveProcs(), "stop all")
		t := time.Now()
		for slot := range s.set.procs {
			if err := s.start(slot); err != nil {
				return err
			}
		}
		return s.recovered(ctx, "restart of all processes", t)
	}
	return fmt.Errorf("unknown step %v", st)
}

// termThenStart stops slot's process gracefully, waits for the group to
// recover without it, starts it again and waits for recovery.
func (s *scenario) termThenStart(ctx context.Context, slot int) error {
	if err := s.termAndRecover(ctx, slot, "restart"); err != nil {
		return err
	}
	return s.startAndRecover(ctx, slot)
}

// termAndRecover stops slot's process gracefully (SIGTERM, for why) and
// waits for the group to recover without it.
func (s *scenario) termAndRecover(ctx context.Context, slot int, why string) error {
	t := time.Now()
	p := s.live[slot]
	s.terminate([]*proc{p}, why)
	return s.recovered(ctx, "SIGTERM of "+p.name, t)
}

func (s *scenario) startAndRecover(ctx context.Context, slot int) error {
	t := time.Now()
	if err := s.start(slot); err != nil {
		return err
	}
	return s.recovered(ctx, "restart as "+s.live[slot].name, t)
}
