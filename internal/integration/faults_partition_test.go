package integration

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/internal/tools/tcpproxy"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// proxiedBroker starts a one-node broker whose every client connection
// goes through a tcpproxy.Proxy (kfake advertises its listener's address,
// which tcpproxy.Front makes the proxy's), and returns that proxy.
func proxiedBroker(t *testing.T) (*kafkatest.Broker, *tcpproxy.Proxy) {
	t.Helper()
	var mu sync.Mutex
	var proxies []*tcpproxy.Proxy
	listen := tcpproxy.ListenFunc(func(p *tcpproxy.Proxy) {
		mu.Lock()
		proxies = append(proxies, p)
		mu.Unlock()
	})
	b := kafkatest.NewKfake(t, kafkatest.WithKfakeOptions(kfake.ListenFn(listen)))
	mu.Lock()
	defer mu.Unlock()
	if len(proxies) != 1 {
		t.Fatalf("%d proxies for a one-node broker", len(proxies))
	}
	if addrs := b.Addrs(); len(addrs) != 1 || addrs[0] != proxies[0].Addr() {
		t.Fatalf("broker addresses %v, want the proxy's %s", addrs, proxies[0].Addr())
	}
	return b, proxies[0]
}

// proxiedRun is one consumer, A, on a proxied broker (proxiedBroker),
// reading a filled topic: every processing is counted in seen and es, and
// every commit is watched.
type proxiedRun struct {
	b            *kafkatest.Broker
	px           *tcpproxy.Proxy
	topic, group string
	hw           map[int32]int64
	seen         *offsets
	es           *epochs
	watch        *commitWatch
	obs          *commitLog
	ov           map[string]any // the source's overrides: the session timeout
	a            *consumer
	asrc         *source.Source // A's source
}

// startProxied fills the topic name-mode with perPartition records in each
// of parts partitions and starts A with the session timeout session, its
// graph waiting at gs. It returns once the group committed held on every
// partition and A was delivered the first delivered records of each.
func startProxied(t *testing.T, name string, mode tcpproxy.Mode, parts, perPartition int, session time.Duration, held, delivered int64, gs gates) *proxiedRun {
	t.Helper()
	r := &proxiedRun{topic: name + "-" + mode.String(), group: name + "-" + mode.String() + "-g"}
	r.b, r.px = proxiedBroker(t)
	_, r.hw = fillTopic(t, r.b, r.topic, int32(parts), perPartition)
	r.seen = newOffsets(r.hw)
	r.es = &epochs{b: r.b, group: r.group, topic: r.topic}
	r.watch = watchCommits(t, r.b, r.group, r.topic, r.seen)
	r.obs = newCommitLog(r.b, r.group, r.topic)
	r.ov = map[string]any{"session.timeout.ms": int(session.Milliseconds())}
	r.asrc = newSourceWith(t, r.b, r.group, r.topic, "A", 50*time.Millisecond, r.ov)
	r.a = startConsumer(t, "A", r.asrc,
		countingBuilder("A", r.es, r.seen, gs),
		pipeline.WithHooks(r.obs), pipeline.WithDrainTimeout(5*time.Second))
	waitGroupAt(t, r.b, r.group, r.topic, uniform(parts, held), r.a)
	waitFor(t, fmt.Sprintf("the first %d records of every partition delivered", delivered), func() bool {
		return r.obs.deliveredAtLeast(parts, delivered)
	}, r.a)
	return r
}

// failWhileProcessing cuts or stalls the network, as mode says, then
// opens held (the gate A's graph waits at) and waits until A processed
// every partition through offset through while the network is down.
func (r *proxiedRun) failWhileProcessing(t *testing.T, mode tcpproxy.Mode, held *gate, through int64) {
	t.Helper()
	if mode == tcpproxy.Cut {
		r.px.Cut()
	} else {
		r.px.Stall()
	}
	held.open()
	waitFor(t, fmt.Sprintf("the records up to offset %d processed", through), func() bool { return r.seen.processedThrough(through) }, r.a)
}

// cutAtCommit opens held (the gate A's graph waits at) and cuts the
// network when the broker receives the group's next OffsetCommit, which it
// drops unanswered: A's commit was sent and its connection reset, as when
// a cut catches a commit in flight. It then waits until A processed every
// partition through offset through.
func (r *proxiedRun) cutAtCommit(t *testing.T, held *gate, through int64) {
	t.Helper()
	var cut atomic.Bool
	r.b.Cluster().ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if req.(*kmsg.OffsetCommitRequest).Group != r.group {
			return nil, nil, false
		}
		r.px.Cut()
		cut.Store(true)
		return nil, errors.New("cut off while the commit was in flight"), true // closes the connection, unanswered
	})
	held.open()
	waitFor(t, "the network cut at a commit", cut.Load, r.a)
	waitFor(t, fmt.Sprintf("the records up to offset %d processed", through), func() bool { return r.seen.processedThrough(through) }, r.a)
}

// awaitBackground waits until the client calls A's Run left running in
// the background (a commit it stopped waiting for, a Close past
// Config.CloseTimeout) returned, failing t if they did not by deadline.
// They need the broker: a commit sent before the network failed and
// unanswered is retried on the group's coordinator connection, and
// librdkafka's Close waits for it. Once the broker stops with the test
// they never return (a retry that was never sent is not counted, and the
// coordinator is never found again), so the test must not end before
// they did.
func (r *proxiedRun) awaitBackground(t *testing.T, deadline time.Time) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		librdkafka.SourceBackground(r.asrc).Wait()
		close(done)
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("A's client calls left running in the background (an unanswered commit, its Close) had not returned by %v; goroutines:\n%s",
			deadline.Format(time.StampMilli), stacks())
	}
}

// check checks, once every consumer stopped, that no commit ran ahead of
// the processing, that each ownership started at the group's commit, that
// each offset was processed times(partition, offset) times, and that the
// group committed the high watermarks.
func (r *proxiedRun) check(t *testing.T, times func(int32, int64) int32) {
	t.Helper()
	r.watch.check(t)
	r.es.check(t)
	r.seen.checkTimes(t, times)
	checkCommittedEquals(t, r.b, r.group, r.topic, r.hw)
}

// TestFaultNetworkPartition: the network between the consumer and the
// broker fails for longer than the session timeout, either cut
// (connections reset, new ones refused) or stalled (nothing gets through
// but connections stay open, as when packets are dropped), then heals.
//
// Each partition is held at offset 1000 until the group committed 1000,
// and at 2000 once the records up to there were delivered. The network
// fails; the records 1000..1999 are processed while it is down (their
// commits cannot reach the broker). librdkafka sees its session expire
// and reports the partitions lost; the broker expires the member too.
// The group's commits are still 1000: nothing was committed while the
// consumer was cut off. The network heals, the consumer rejoins on its own
// and gets every partition back, each starting exactly at 1000: the
// records 1000..1999 are processed a second time, every other record
// exactly once, and the group commits the high watermarks. Run never
// returns during any of it.
func TestFaultNetworkPartition(t *testing.T) {
	eachCase(t, outages, tcpproxy.Mode.String, networkPartition)
}

func networkPartition(t *testing.T, mode tcpproxy.Mode) {
	const parts, perPartition, held, cutAt = 4, 3000, 1000, 2000
	const session = 3 * time.Second
	beforeCut, afterHeal := newGate(), newGate()
	r := startProxied(t, "fnp", mode, parts, perPartition, session, held, cutAt, gates{held: beforeCut, cutAt: afterHeal})
	b, group, obs, a := r.b, r.group, r.obs, r.a

	began := time.Now()
	r.failWhileProcessing(t, mode, beforeCut, cutAt-1)
	waitFor(t, "A losing every partition", func() bool { return obs.groupObserver.lost.Load() == parts }, a)
	waitFor(t, "the broker expiring A's session", func() bool {
		gi := b.Cluster().GroupInfo(group)
		return gi == nil || len(gi.Members) == 0
	}, a)
	down := time.Since(began)
	a.stillRunning(t, "the network partition")
	if got, want := obs.committedAtLoss(), uniform(parts, held); !maps.Equal(got, want) {
		t.Errorf("the group's commits at the loss: %v, want %v", got, want)
	}
	if got, want := b.Committed(t, group, r.topic), uniform(parts, held); !maps.Equal(got, want) {
		t.Errorf("the group's commits after the session expired: %v, want %v", got, want)
	}

	r.px.Restore()
	healed := time.Now()
	waitFor(t, "A getting every partition back", func() bool {
		return obs.assigned.Load() == 2*parts && obs.owns() == parts
	}, a)
	t.Logf("%s: down for %v (session timeout %v); every partition back %v after the network healed",
		mode, down.Round(time.Millisecond), session, time.Since(healed).Round(time.Millisecond))
	afterHeal.open()
	waitGroupAt(t, b, group, r.topic, r.hw, a)
	a.stillRunning(t, "the recovery")
	lost, revoked, assigned := obs.groupObserver.lost.Load(), obs.revoked.Load(), obs.assigned.Load()
	a.stop(t)

	// The second ownership of each partition starts at the group's commit.
	r.check(t, func(_ int32, off int64) int32 {
		if off >= held && off < cutAt {
			return 2
		}
		return 1
	})
	if lost != parts || revoked != 0 || assigned != 2*parts {
		t.Errorf("%d partitions lost, %d revoked, %d assigned; want %d, 0, %d", lost, revoked, assigned, parts, 2*parts)
	}
}

// backgroundBound bounds how long after the network healed a consumer
// stopped while cut off may take to finish what its Run left running:
// librdkafka reconnects (reconnect.backoff.max.ms is 500ms here), finds
// the coordinator again, the commit it was retrying is answered and Close
// returns, all in well under a second. It stays below socket.timeout.ms
// (60s), the period at which librdkafka retries a commit that cannot be
// sent, so a commit that never gets through fails the test.
const backgroundBound = 30 * time.Second

// TestFaultShutdownWhileCutOff: the consumer is stopped while the network
// to the broker is down (cut or stalled), with records processed since
// the last commit. The final commit cannot reach the broker and the
// client cannot leave its group; Run must still return, within
// stopBound, nil or an error naming the failed final commit, and commit
// nothing the broker could see. After the network
// heals, a new consumer starts exactly at the last commit and the group
// commits the high watermarks, and what the first consumer's Run left
// running in the background (its Close, a commit still unanswered)
// returns.
func TestFaultShutdownWhileCutOff(t *testing.T) {
	eachCase(t, outages, tcpproxy.Mode.String, shutdownCutOff)
}

func shutdownCutOff(t *testing.T, mode tcpproxy.Mode) { stopCutOff(t, "fsc", mode, false) }

// TestFaultShutdownCutOffMidCommit is TestFaultShutdownWhileCutOff's cut
// made when the broker receives the consumer's first interval commit after
// the gate opened, which is never answered (its connection is reset).
// librdkafka retries it once the coordinator is found again, so the final
// commit is not sent behind it and librdkafka's Close waits for it; both
// outlive Run. The same holds: Run returns within stopBound, nothing
// reaches the broker while cut off, and once the network heals B starts
// at the last commit and A's Close and commit return.
func TestFaultShutdownCutOffMidCommit(t *testing.T) {
	t.Parallel()
	stopCutOff(t, "fscm", tcpproxy.Cut, true)
}

// stopCutOff is TestFaultShutdownWhileCutOff; with midCommit, the network
// is cut at A's first commit after the gate opened (cutAtCommit).
func stopCutOff(t *testing.T, name string, mode tcpproxy.Mode, midCommit bool) {
	const parts, perPartition, held = 4, 2000, 1000
	const session = 3 * time.Second
	beforeCut := newGate()
	r := startProxied(t, name, mode, parts, perPartition, session, held, perPartition, gates{held: beforeCut})
	b, group, topic := r.b, r.group, r.topic

	if midCommit {
		r.cutAtCommit(t, beforeCut, perPartition-1)
	} else {
		r.failWhileProcessing(t, mode, beforeCut, perPartition-1)
	}
	took, err := r.a.stopTimed(t)
	t.Logf("%s: A stopped in %v: Run = %v; sync commit errors %v", mode, took.Round(time.Millisecond), err, r.obs.syncErrors())
	if err != nil && !strings.Contains(err.Error(), "final commit") {
		t.Errorf("A: Run = %v, want nil or an error naming the failed final commit", err)
	}
	if got, want := b.Committed(t, group, topic), uniform(parts, held); !maps.Equal(got, want) {
		t.Errorf("the group's commits after A stopped cut off: %v, want %v", got, want)
	}
	r.px.Restore()
	healed := time.Now()

	bc := startConsumer(t, "B", newSourceWith(t, b, group, topic, "B", 50*time.Millisecond, r.ov),
		countingBuilder("B", r.es, r.seen, nil))
	waitGroupAt(t, b, group, topic, r.hw, bc)
	bc.stop(t)
	// What A left running when Run returned (its Close, a commit sent
	// before the network failed) ends once librdkafka reaches the
	// coordinator again: well within backgroundBound of the network
	// healing. Any commit of A's that lands meanwhile is checked below.
	r.awaitBackground(t, healed.Add(backgroundBound))

	r.check(t, func(_ int32, off int64) int32 {
		if off >= held {
			return 2
		}
		return 1
	})
}

// TestFaultNetworkBlip: the network fails for less than the session
// timeout (cut: until the consumer's reconnects were refused six times;
// stalled: until the proxy holds two chunks the client or broker sent)
// while records are processed. librdkafka reconnects and carries on:
// nothing is lost or revoked, every record is processed exactly once, no
// commit reaches the broker while it is cut off, and the group commits the
// high watermarks once the network is back.
func TestFaultNetworkBlip(t *testing.T) {
	eachCase(t, outages, tcpproxy.Mode.String, networkBlip)
}

func networkBlip(t *testing.T, mode tcpproxy.Mode) {
	const parts, perPartition, held = 4, 2000, 1000
	const session = 10 * time.Second
	g := newGate()
	r := startProxied(t, "fnb", mode, parts, perPartition, session, held, perPartition, gates{held: g})
	px, obs, a := r.px, r.obs, r.a

	began := time.Now()
	accepted := px.Accepted()
	r.failWhileProcessing(t, mode, g, perPartition-1)
	if mode == tcpproxy.Cut {
		// librdkafka reconnects with a backoff doubling from 100ms,
		// over its bootstrap, broker and coordinator connections.
		waitFor(t, "six refused reconnects", func() bool { return px.Accepted() >= accepted+6 }, a)
	} else {
		waitFor(t, "requests held by the stall", func() bool { return px.Held() >= 2 }, a)
	}
	if got, want := r.b.Committed(t, r.group, r.topic), uniform(parts, held); !maps.Equal(got, want) {
		t.Errorf("the group's commits while cut off: %v, want %v", got, want)
	}
	px.Restore()
	down := time.Since(began)
	waitGroupAt(t, r.b, r.group, r.topic, r.hw, a)
	t.Logf("%s: down for %v (session timeout %v); the high watermarks committed %v after the network healed",
		mode, down.Round(time.Millisecond), session, (time.Since(began) - down).Round(time.Millisecond))
	if down >= session {
		t.Fatalf("the outage lasted %v, not less than the session timeout %v: the test exercised nothing", down, session)
	}
	a.stillRunning(t, "the blip")
	lost, revoked := obs.groupObserver.lost.Load(), obs.revoked.Load()
	a.stop(t)

	r.check(t, func(int32, int64) int32 { return 1 })
	if lost != 0 || revoked != 0 {
		t.Errorf("%d partitions lost and %d revoked, want none", lost, revoked)
	}
}
