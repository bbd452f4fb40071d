package franz

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// purgeWait is the setting of the tests of a group source consuming a
// deleted (and recreated) topic anew while its purge from the client
// (kgo.Client.PurgeTopicsFromClient) waits on kgo's metadata loop for a
// Metadata request a broker answers late.
//
// A kfake cluster of two nodes holds topics orders and stays (one
// partition each, led by the same node), and a source of both in group g
// has the node that is not the group's coordinator, slow, as its only
// seed broker. Its client keeps a Metadata request in flight
// (MetadataMaxAge) and gives none up before the test ends (a request may
// take 10 minutes). From the deletion of a topic on, the slow node
// answers the Metadata requests naming both topics (the source's: tests
// produce to stays with produceFresh) once release is closed, or the test
// ended; kgo spreads the metadata loop's requests over the brokers it
// knows, the seed included, so one soon waits there. Until it does, no
// fetch is answered: the source reports the topic gone once the metadata
// loop waits. A broker answers the requests of one connection in order:
// the coordinator's connection, which the commits and heartbeats take, is
// never held; a commit's check of the topic IDs (a Metadata request to
// any broker, naming stays alone) goes to the coordinator too, so no
// commit waits behind the held request (failedChecks).
type purgeWait struct {
	b       *kafkatest.Broker
	src     *Source
	anew    chan string   // the topics the source consumes anew
	release chan struct{} // closed: the broker answers the held Metadata requests
	// goneAgain counts the source's reports of a topic gone while its
	// purge runs.
	goneAgain atomic.Int64
	// failedChecks counts the commits that failed because their check of
	// the topic IDs got no answer (the source's "sluice: commit failed"
	// warnings with that error).
	failedChecks atomic.Int64
}

// newPurgeWait returns a purgeWait whose source has closeTimeout and
// whose client is made with opts too.
func newPurgeWait(t *testing.T, closeTimeout time.Duration, opts ...kgo.Opt) *purgeWait {
	t.Helper()
	b := kafkatest.NewKfake(t, kafkatest.WithNodes(2))
	b.CreateTopic(t, "orders", 1)
	b.CreateTopic(t, "stays", 1)
	c := b.Cluster()
	coordinator := c.CoordinatorFor("g")
	slow := 1 - coordinator
	// One leader: a fetch holding stays' partition is not backed off
	// when orders' partition fails.
	if err := c.MoveTopicPartition("stays", 0, c.LeaderFor("orders", 0)); err != nil {
		t.Fatal(err)
	}
	p := &purgeWait{b: b, anew: make(chan string, 16), release: make(chan struct{})}
	// The source logs that it consumes a topic anew just before it
	// purges the topic from the client.
	logger := slog.New(failedCheckHandler{n: &p.failedChecks,
		next: countingHandler{next: consumingAnewLogger(t, sendTopic(p.anew)).Handler(), msg: goneAgain, n: &p.goneAgain}})
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: []string{nodeAddr(t, b, slow)}, Group: "g",
		Topics: []string{"orders", "stays"}, CommitInterval: 100 * time.Millisecond, CloseTimeout: closeTimeout, Logger: logger},
		Opts: append([]kgo.Opt{kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(time.Second),
			kgo.RequestTimeoutOverhead(10 * time.Minute)}, opts...)})
	if err != nil {
		t.Fatal(err)
	}
	p.src = src
	ended := make(chan struct{}) // the test is over: no answer waits any longer
	t.Cleanup(func() { close(ended) })
	deletion := watchDeletion(c)
	held := make(chan struct{}) // closed once a Metadata request is held
	var heldOnce sync.Once
	holdMetadata(c, func() bool { return deletion.seen() && c.CurrentNode() == slow }, func() {
		heldOnce.Do(func() { close(held) })
		select {
		case <-p.release:
		case <-ended:
		}
	}, "orders", "stays")
	// No fetch is answered from the deletion on until a Metadata request
	// is held: the client reports orders gone only then.
	c.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !deletion.seen() {
			return nil, nil, false
		}
		select {
		case <-held:
		default:
			c.SleepControl(func() {
				select {
				case <-held:
				case <-ended:
				}
			})
		}
		return nil, nil, false
	})
	return p
}

// nodeAddr returns the address of node of b.
func nodeAddr(t *testing.T, b *kafkatest.Broker, node int32) string {
	t.Helper()
	adm, err := b.Admin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range brokers {
		if d.NodeID == node {
			return fmt.Sprintf("%s:%d", d.Host, d.Port)
		}
	}
	t.Fatalf("no node %d in %v", node, brokers)
	return ""
}

// heldRun is a Run of a purgeWait's source whose graph is a heldGraph
// naming its records topicValueOffset.
type heldRun struct {
	g      *heldGraph
	cancel context.CancelFunc
	done   <-chan error // Run's end
	// got counts the records await saw, by name.
	got map[string]int
	// await waits until each record it is given was seen
	// (recordAwaiter), within recreateWait of Run's start.
	await func(want ...string)
}

// startHeld starts Run of p's source with a heldGraph holding the record
// valued hold and ending in end (doneEnd, txnEnd); the test ends it with
// stopRun or stopWhilePurgeWaits.
func (p *purgeWait) startHeld(t *testing.T, hold string, end recreatedEnd) *heldRun {
	t.Helper()
	g, build := newHeldGraph(hold, topicValueOffset, end(t, p.b, p.src))
	r := &heldRun{g: g, got: map[string]int{}}
	r.cancel, r.done = startRun(t, p.src, build)
	r.await = recordAwaiter(t, g.seen, r.done, time.After(recreateWait), recreateWait, r.got)
	return r
}

// recreateOrders deletes orders and creates it again, led by the same
// node (recreateOrdersOnItsLeader), then waits until the source consumes
// it anew (Run, whose end done reports, still runs).
func (p *purgeWait) recreateOrders(t *testing.T, done <-chan error) {
	t.Helper()
	p.recreateOrdersOnItsLeader(t)
	select {
	case topic := <-p.anew:
		if topic != "orders" {
			t.Fatalf("consumed %s anew, want orders", topic)
		}
	case err := <-done:
		t.Fatalf("Run returned %v before consuming orders anew", err)
	case <-time.After(recreateWait):
		t.Fatalf("orders not consumed anew within %v", recreateWait)
	}
}

// recreateOrdersOnItsLeader deletes orders and creates it again, led by
// the node that led it: a fetch under the old ID then fails with the
// topic's ID unknown, not with another leader to look up in the metadata
// the client waits for.
func (p *purgeWait) recreateOrdersOnItsLeader(t *testing.T) {
	t.Helper()
	c := p.b.Cluster()
	leader := c.LeaderFor("orders", 0)
	kafkadriver.RecreateTopic(t, p.b, "orders", 1)
	if err := c.MoveTopicPartition("orders", 0, leader); err != nil {
		t.Fatal(err)
	}
}

// awaitBackground waits, within recreateWait, for the goroutines of
// client calls a source's Run started (Source.background,
// ShareSource.background): after Run returned, a client Close it left
// running or a purge still waiting.
func awaitBackground(t *testing.T, background *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		background.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(recreateWait):
		t.Fatalf("goroutines of client calls still running %v after Run returned", recreateWait)
	}
}

// topicValueOffset names a record "topic:value@offset".
func topicValueOffset(r sluice.Record) string {
	return r.Topic + ":" + valueOffset(r)
}

// The timing of a stop while a purge waits (stopWhilePurgeWaits).
const (
	// stopMargin is what Run may take past the source's CloseTimeout to
	// return: the runtime's drain, with nothing to drain.
	stopMargin = 2 * time.Second
	// stopMetadataLate is when the broker answers the held Metadata
	// request, after Run's context ended.
	stopMetadataLate = 8 * time.Second
)

// purgeWaitStop is a Run of a source (a group's or a share group's)
// whose purge of a recreated topic waits for a Metadata request the
// broker holds until release is closed: what stopWhilePurgeWaits stops.
type purgeWaitStop struct {
	cancel  context.CancelFunc // ends Run's context
	done    <-chan error       // Run's end
	release chan struct{}      // closed: the broker answers the held requests
	// background counts the goroutines of client calls Run started
	// (Source.background, ShareSource.background).
	background *sync.WaitGroup
	// closeTimeout is the source's CloseTimeout, setting its name
	// ("Config.CloseTimeout").
	closeTimeout time.Duration
	setting      string
	// inBackground is in Run's error when closing the client goes on in
	// the background.
	inBackground string
}

// stopWhilePurgeWaits cancels s's Run while its purge waits for the held
// Metadata request, and has the broker answer it stopMetadataLate after
// that. Run must return within s.closeTimeout plus stopMargin, with nil
// or the error that closing the client goes on in the background (kgo's
// Close may wait for the held request); once the broker answered,
// nothing Run started may be left running.
func stopWhilePurgeWaits(t *testing.T, s purgeWaitStop) {
	t.Helper()
	s.cancel()
	stopped := time.Now()
	answer := time.AfterFunc(stopMetadataLate, func() { close(s.release) })
	defer answer.Stop()
	select {
	case err := <-s.done:
		took := time.Since(stopped)
		t.Logf("Run = %v, %v after its context ended", err, took.Round(time.Millisecond))
		if err != nil && !strings.Contains(err.Error(), s.inBackground) {
			t.Errorf("Run = %v, want nil or the error that Close goes on in the background", err)
		}
		if limit := s.closeTimeout + stopMargin; took > limit {
			t.Errorf("Run returned %v after its context ended (a Metadata request answered %v late), want within %s (%v) plus %v",
				took.Round(time.Millisecond), stopMetadataLate, s.setting, s.closeTimeout, stopMargin)
		}
	case <-time.After(recreateWait):
		t.Fatalf("Run did not return within %v of its context's end", recreateWait)
	}
	// A client Close left running ends once the broker answers.
	if answer.Stop() {
		close(s.release)
	}
	awaitBackground(t, s.background)
}

// failedCheckHandler counts in n the warnings that a commit failed whose
// error is that of a check of the topic IDs that got no answer
// (replacedTopics), and passes every record on to next.
type failedCheckHandler struct {
	next slog.Handler
	n    *atomic.Int64
}

func (h failedCheckHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h failedCheckHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "sluice: commit failed" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" && strings.Contains(a.Value.String(), "checking the topic IDs of the offsets (Metadata)") {
				h.n.Add(1)
			}
			return true
		})
	}
	return h.next.Handle(ctx, r)
}

func (h failedCheckHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h failedCheckHandler) WithGroup(string) slog.Handler      { return h }
