package source

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/internal/producertest"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// librdkafka's threads are C threads, invisible to goleak; the Go side of
// the client (log poller) and kfake/kgo all stop on Close. The one ignore:
// after a fatal client error Run closes the consumer in the background
// because confluent-kafka-go v2.11.1's Close never returns then
// (confluent-kafka-go#1588); TestFatalErrorLosesAll leaves that goroutine.
func TestMain(m *testing.M) {
	code := kafkatest.Pooled(m).Run()
	if benchBroker != nil {
		benchBroker.Close()
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/confluentinc/confluent-kafka-go/v2/kafka.(*Consumer).Close")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

const wait = 30 * time.Second

// newSource builds a source for the broker with test-friendly timings.
func newSource(t testing.TB, b *kafkatest.Broker, group, topic string, overrides map[string]any) *Source {
	t.Helper()
	ov := map[string]any{
		"heartbeat.interval.ms": 100,
		"session.timeout.ms":    6000,
	}
	if overrides["group.protocol"] == "consumer" {
		ov = map[string]any{}
	}
	if d := os.Getenv("RDK_DEBUG"); d != "" {
		ov["debug"] = d
	}
	maps.Copy(ov, overrides)
	gc := producertest.SourceGroup(b.Addrs(), group, topic)
	gc.Logger = kafkatest.Logger(t)
	src, err := NewSource(Config{GroupConfig: gc, Overrides: ov})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// topicIn creates topic "in" of parts partitions on b, each holding n
// records (producertest.Input(parts, 0, n)), and returns b.
func topicIn(t testing.TB, b *kafkatest.Broker, parts int32, n int) *kafkatest.Broker {
	t.Helper()
	b.CreateTopic(t, "in", parts)
	b.Produce(t, "in", producertest.Input(parts, 0, n)...)
	return b
}

// sameHeader reports whether a and b have the same key and value.
func sameHeader(a, b sluice.Header) bool { return a.Key == b.Key && bytes.Equal(a.Value, b.Value) }

func delivered(n int) func(*fakeGroup) bool {
	return func(f *fakeGroup) bool { return f.total >= n }
}

// checkExactlyOnce checks that the deliveries of all groups together cover
// every offset of every partition below the high watermark exactly once.
func checkExactlyOnce(t *testing.T, hw map[int32]int64, gs ...*fakeGroup) {
	t.Helper()
	seen := map[int32]map[int64]int{}
	for _, g := range gs {
		g.with(func(f *fakeGroup) {
			for _, v := range f.violations {
				t.Errorf("contract violation: %s", v)
			}
			for tp, recs := range f.recs {
				if seen[tp.Partition] == nil {
					seen[tp.Partition] = map[int64]int{}
				}
				for _, r := range recs {
					seen[tp.Partition][r.Offset]++
				}
			}
		})
	}
	for p, h := range hw {
		for o := int64(0); o < h; o++ {
			if n := seen[p][o]; n != 1 {
				t.Errorf("partition %d offset %d delivered %d times", p, o, n)
				return
			}
		}
		if int64(len(seen[p])) != h {
			t.Errorf("partition %d: delivered %d distinct offsets, high watermark %d", p, len(seen[p]), h)
		}
	}
}

func checkCommitted(t *testing.T, b *kafkatest.Broker, group, topic string) {
	t.Helper()
	hw := b.HighWatermarks(t, topic)
	got := b.Committed(t, group, topic)
	if !maps.Equal(got, hw) {
		t.Errorf("committed %v, want high watermarks %v", got, hw)
	}
}

func TestConsumeAllCommitsHighWatermarks(t *testing.T) {
	for _, tc := range []struct {
		name string
		ov   map[string]any
	}{
		{"cooperative-sticky", nil},
		{"range", map[string]any{"partition.assignment.strategy": "range"}},
		{"kip848", map[string]any{"group.protocol": "consumer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := topicIn(t, kafkatest.NewBroker(t), 4, 500)
			want := b.ReadAll(t, "in")

			g := newFakeGroup()
			r := start(t, newSource(t, b, "g", "in", tc.ov), g)
			g.waitUntil(t, wait, "all records", delivered(len(want)))
			hw := b.HighWatermarks(t, "in")
			g.waitUntil(t, wait, "high watermarks reported", func(f *fakeGroup) bool {
				for p, h := range hw {
					if f.highs[TP{Topic: "in", Partition: p}] != h {
						return false
					}
				}
				return true
			})
			if err := r.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			g.with(func(f *fakeGroup) {
				if f.joins != 1 || f.polls == 0 {
					t.Errorf("Joined %d times, Polled %d times", f.joins, f.polls)
				}
				// The shutdown's commit is the last one: the source sends
				// every commit itself, one at a time, and librdkafka commits
				// nothing on unassign or close (enable.auto.commit=false).
				if len(f.commits) == 0 {
					t.Fatal("no commit reported")
				}
				last := f.commits[len(f.commits)-1]
				if last.err != nil || len(last.offs) != 4 || last.took <= 0 {
					t.Errorf("last Committed(%v, %v, %v), want the final commit of the 4 partitions' offsets, with its duration", last.offs, last.took, last.err)
				}
				for _, o := range last.offs {
					if o.Next != hw[o.Partition] {
						t.Errorf("final commit of %s/%d at %d, want the high watermark %d", o.Topic, o.Partition, o.Next, hw[o.Partition])
					}
				}
			})

			checkExactlyOnce(t, b.HighWatermarks(t, "in"), g)
			checkCommitted(t, b, "g", "in")
			g.with(func(f *fakeGroup) {
				if f.shutdowns != 1 {
					t.Errorf("Shutdown called %d times, want 1", f.shutdowns)
				}
				var got []sluice.Record
				for p := range int32(4) {
					got = append(got, f.recs[TP{Topic: "in", Partition: p}]...)
				}
				if len(got) != len(want) {
					t.Fatalf("got %d records, want %d", len(got), len(want))
				}
				for i := range want {
					w, g := want[i], got[i]
					if g.Topic != w.Topic || g.Partition != w.Partition || g.Offset != w.Offset ||
						!bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) ||
						!g.Timestamp.Equal(w.Timestamp) || !slices.EqualFunc(g.Headers, w.Headers, sameHeader) {
						t.Fatalf("record %d: got %+v, want %+v", i, g, w)
					}
				}
			})
		})
	}
}

// twoConsumers runs consumer A, adds consumer B, stops B gracefully and
// checks that every record is delivered exactly once across both and that
// everything ends up committed.
func twoConsumers(t *testing.T, strategy string) (a, bg *fakeGroup) {
	b := kafkatest.NewBroker(t)
	const parts = 6
	b.CreateTopic(t, "in", parts)
	ov := map[string]any{"partition.assignment.strategy": strategy}
	if strategy == "kip848" {
		ov = map[string]any{"group.protocol": "consumer"}
	}
	n := 0
	produce := func(per int) {
		b.Produce(t, "in", producertest.Input(parts, n, per)...)
		n += per
	}

	produce(100)
	a = newFakeGroup()
	ra := start(t, newSource(t, b, "g", "in", ov), a)
	a.waitUntil(t, wait, "A consumes all", delivered(n*parts))

	bg = newFakeGroup()
	rb := start(t, newSource(t, b, "g", "in", ov), bg)
	split := func(f *fakeGroup) bool { return len(f.assigned) > 0 && len(f.assigned) < parts }
	bg.waitUntil(t, wait, "B gets partitions", func(f *fakeGroup) bool { return len(f.assigned) > 0 })
	a.waitUntil(t, wait, "A gives partitions up", split)

	produce(100)
	total := func() int {
		var s int
		a.with(func(f *fakeGroup) { s += f.total })
		bg.with(func(f *fakeGroup) { s += f.total })
		return s
	}
	waitAll(t, wait, "A and B consume all", func() bool { return total() >= n*parts }, a, bg)

	if err := rb.stop(t); err != nil {
		t.Fatalf("B Run: %v", err)
	}
	a.waitUntil(t, wait, "A owns everything again", func(f *fakeGroup) bool { return len(f.assigned) == parts })
	produce(100)
	waitAll(t, wait, "A consumes the rest", func() bool { return total() >= n*parts }, a, bg)
	if err := ra.stop(t); err != nil {
		t.Fatalf("A Run: %v", err)
	}
	checkExactlyOnce(t, b.HighWatermarks(t, "in"), a, bg)
	checkCommitted(t, b, "g", "in")
	return a, bg
}

func TestTwoConsumersCooperative(t *testing.T) {
	t.Parallel()
	a, _ := twoConsumers(t, "cooperative-sticky")
	a.with(func(f *fakeGroup) {
		// Cooperative: A never gives up everything until its shutdown.
		for _, r := range f.revokes {
			if len(r) == 6 {
				t.Errorf("cooperative rebalance revoked all partitions: %v", f.revokes)
			}
		}
		if len(f.revokes) == 0 {
			t.Errorf("A never revoked a partition")
		}
	})
}

func TestTwoConsumersEager(t *testing.T) {
	t.Parallel()
	a, _ := twoConsumers(t, "range")
	a.with(func(f *fakeGroup) {
		// Eager: the first rebalance takes everything away from A.
		if len(f.revokes) == 0 || len(f.revokes[0]) != 6 {
			t.Errorf("eager rebalance revokes %v, want all 6 partitions first", f.revokes)
		}
	})
}

func TestTwoConsumersKIP848(t *testing.T) {
	t.Parallel()
	twoConsumers(t, "kip848")
}

// Partitions the runtime pauses at every 100 records and resumes later
// deliver every record once, and the group commits to the end.
func TestPausedPartitionsResumeWithoutLossOrRepeat(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewBroker(t), 3, 3000)
	total := 3 * 3000

	g := newFakeGroup()
	g.pauseEvery = 100
	done := make(chan struct{})
	defer close(done)
	// The "runtime": frees a paused partition's queue some time later.
	go func() {
		for {
			select {
			case tp := <-g.pausedCh:
				g.release(tp)
			case <-done:
				return
			}
		}
	}()
	r := start(t, newSource(t, b, "g", "in", map[string]any{
		// Small fetches so that pausing actually stops data from flowing.
		"message.max.bytes":          64 << 10,
		"fetch.max.bytes":            64 << 10,
		"max.partition.fetch.bytes":  16 << 10,
		"queued.max.messages.kbytes": 64,
	}), g)
	g.waitUntil(t, wait, "all records", delivered(total))
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkExactlyOnce(t, b.HighWatermarks(t, "in"), g)
	checkCommitted(t, b, "g", "in")
	g.with(func(f *fakeGroup) {
		t.Logf("%d pauses", f.pauses)
		if f.pauses < 10 {
			t.Errorf("only %d pauses; the pause path was not exercised", f.pauses)
		}
	})
}

// A partition that stays paused is not delivered beyond what was already
// polled, and a re-assignment resumes it.
func TestPausedStaysPausedUntilResumable(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewBroker(t), 1, 5000)

	g := newFakeGroup()
	g.pauseEvery = 1 // pause at once, never released
	r := start(t, newSource(t, b, "g", "in", map[string]any{
		"message.max.bytes":          16 << 10,
		"fetch.max.bytes":            16 << 10,
		"max.partition.fetch.bytes":  16 << 10,
		"queued.max.messages.kbytes": 16,
	}), g)
	g.waitUntil(t, wait, "a pause", func(f *fakeGroup) bool { return f.pauses > 0 })
	// Produce a marker and let the loop run for many poll rounds: the
	// paused partition must not reach it.
	var stuck int
	g.with(func(f *fakeGroup) { stuck = f.total })
	tp := TP{Topic: "in", Partition: 0}
	g.release(tp) // one release: it will pause again after the next batch
	g.waitUntil(t, wait, "progress after release", func(f *fakeGroup) bool { return f.total > stuck })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	g.with(func(f *fakeGroup) {
		if f.total >= 5000 {
			t.Errorf("paused partition delivered everything (%d)", f.total)
		}
		t.Logf("delivered %d of 5000 with the partition paused twice", f.total)
	})
	checkExactlyOnce(t, map[int32]int64{0: int64(len(g.recs[tp]))}, g)
	if got := b.Committed(t, "g", "in")[0]; got != int64(len(g.recs[tp])) {
		t.Errorf("committed %d, want %d", got, len(g.recs[tp]))
	}
}

func TestLostAssignmentCommitsNothing(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewKfake(t), 2, 200)

	g := newFakeGroup()
	src := newSource(t, b, "g", "in", nil)
	src.cfg.CommitInterval = time.Hour // nothing but revoke/shutdown commits
	r := start(t, src, g)
	g.waitUntil(t, wait, "all records", delivered(400))

	b.Cluster().Fault(kfake.Fault{
		Keys:  []kmsg.Key{kmsg.Heartbeat},
		Group: "g",
		Err:   kerr.IllegalGeneration,
	})
	g.waitUntil(t, wait, "partitions lost", func(f *fakeGroup) bool { return len(f.loses) > 0 })
	if c := b.Committed(t, "g", "in"); len(c) != 0 {
		t.Errorf("committed %v after losing the assignment, want nothing", c)
	}
	// The consumer rejoins and, with nothing committed, starts over.
	g.waitUntil(t, wait, "re-delivery", delivered(800))
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	g.with(func(f *fakeGroup) {
		if len(f.revokes) != 0 {
			t.Errorf("Revoke called %v; a lost assignment must only Lose", f.revokes)
		}
		for _, v := range f.violations {
			// The re-delivery restarts at 0: Deliver's order check fires
			// only across the loss, which Assign resets.
			t.Errorf("contract violation: %s", v)
		}
	})
	checkCommitted(t, b, "g", "in")
}

// A fatal client error (here: a static member fenced by a newer instance
// with the same group.instance.id) ends Run with the error after losing
// every partition.
func TestFatalErrorLosesAll(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewBroker(t), 2, 10)
	ov := map[string]any{"group.instance.id": "same"}

	g1 := newFakeGroup()
	r1 := start(t, newSource(t, b, "g", "in", ov), g1)
	g1.waitUntil(t, wait, "first consumes", delivered(20))

	g2 := newFakeGroup()
	r2 := start(t, newSource(t, b, "g", "in", ov), g2)
	select {
	case err := <-r1.done:
		r1.done <- err
		if err == nil || !strings.Contains(err.Error(), "fatal") {
			t.Fatalf("Run = %v, want a fatal error", err)
		}
		t.Logf("Run = %v", err)
	case <-time.After(wait):
		t.Fatal("fenced consumer did not stop")
	}
	g1.with(func(f *fakeGroup) {
		if len(f.loses) == 0 || len(f.assigned) != 0 {
			t.Errorf("loses %v, still assigned %v", f.loses, keys(f.assigned))
		}
		if f.shutdowns != 0 {
			t.Errorf("Shutdown called on a fatal error")
		}
	})
	if err := r2.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestNewSourceValidates(t *testing.T) {
	ok := Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"localhost:9092"}, Group: "g", Topics: []string{"t"}}}
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Brokers = nil }, "Config.Brokers"},
		{func(c *Config) { c.Brokers = []string{"a:1,b:2"} }, "Config.Brokers[0]"},
		{func(c *Config) { c.Group = " " }, "Config.Group"},
		{func(c *Config) { c.Topics = nil }, "Config.Topics"},
		{func(c *Config) { c.Topics = []string{"a", ""} }, "Config.Topics[1]"},
		{func(c *Config) { c.CommitInterval = -time.Second }, "Config.CommitInterval"},
		{func(c *Config) { c.CloseTimeout = -time.Second }, "Config.CloseTimeout = -1s: must not be negative"},
		{func(c *Config) { c.CloseTimeout = time.Millisecond }, "Config.CloseTimeout = 1ms: must be at least 100ms"},
		{func(c *Config) { c.Overrides = map[string]any{"group.id": "x"} }, `Config.Overrides["group.id"]`},
		{func(c *Config) { c.Overrides = map[string]any{"enable.auto.commit": true} }, `Config.Overrides["enable.auto.commit"]`},
		{func(c *Config) { c.Overrides = map[string]any{"go.foo": true} }, `Config.Overrides["go.foo"]`},
		{func(c *Config) { c.Overrides = map[string]any{"x": []int{1}} }, `Config.Overrides["x"]`},
	} {
		c := ok
		tc.mut(&c)
		_, err := NewSource(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSource(%+v) = %v, want error naming %s", c, err, tc.want)
		}
	}
	if _, err := NewSource(ok); err != nil {
		t.Errorf("NewSource(valid) = %v", err)
	}
}

func TestBadLibrdkafkaPropertyFailsRun(t *testing.T) {
	src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"t"}},
		Overrides: map[string]any{"no.such.property": 1}})
	if err != nil {
		t.Fatal(err)
	}
	g := newFakeGroup()
	err = src.Run(t.Context(), g)
	if err == nil || !strings.Contains(err.Error(), "no.such.property") {
		t.Fatalf("Run = %v, want an error naming the property", err)
	}
}

func TestSecretsNotLogged(t *testing.T) {
	var buf bytes.Buffer
	// Every property librdkafka marks sensitive (v2.11), and some that
	// hold secrets without a telling name.
	secrets := map[string]any{
		"sasl.password": "hunter2", "ssl.key.pem": "PRIVATE", "sasl.oauthbearer.client.secret": "s3",
		"sasl.jaas.config": "jaasvalue", "sasl.oauthbearer.config": "principal=admin clientSecret=oauthcfg",
		"ssl.key.password": "keypass", "ssl.keystore.password": "storepass",
		"sasl.oauthbearer.assertion.private.key.passphrase": "pp-value",
		"sasl.oauthbearer.assertion.private.key.pem":        "ASSERTPEM", "sasl.oauthbearer.extensions": "ext=extsecret",
		"sasl.username": "alice", "ssl.certificate.pem": "CERTPEM",
	}
	overrides := map[string]any{"client.id": "visible", "sasl.mechanism": "OAUTHBEARER"}
	for k, v := range secrets {
		overrides[k] = v
	}
	c := Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"h:1"}, Group: "g", Topics: []string{"t"}}, Overrides: overrides}
	cm, err := c.configMap(pipeline.DefaultDrainTimeout)
	if err != nil {
		t.Fatal(err)
	}
	slog.New(slog.NewTextHandler(&buf, nil)).Info("cfg", librdkafka.Redacted(cm)...)
	out := buf.String()
	for k, v := range secrets {
		if !strings.Contains(out, k+"=[redacted]") || strings.Contains(out, v.(string)) {
			t.Errorf("%s is not redacted: %s", k, out)
		}
	}
	if !strings.Contains(out, "client.id=visible") || !strings.Contains(out, "sasl.mechanism=OAUTHBEARER") {
		t.Errorf("log misses client.id or sasl.mechanism: %s", out)
	}
}

// A partition given up while paused stays paused inside librdkafka; when
// it is assigned again the source must resume it, or it never delivers.
func TestPartitionLostWhilePausedIsResumedOnReassign(t *testing.T) {
	t.Parallel()
	b := topicIn(t, kafkatest.NewKfake(t), 1, 300)

	g := newFakeGroup()
	g.pauseEvery = 1 // pause at the first delivery, never released
	src := newSource(t, b, "g", "in", nil)
	src.cfg.CommitInterval = time.Hour
	r := start(t, src, g)
	g.waitUntil(t, wait, "a pause", func(f *fakeGroup) bool { return f.pauses > 0 })
	g.with(func(f *fakeGroup) { f.pauseEvery = 0 }) // no more pauses after the loss

	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: "g", Err: kerr.IllegalGeneration})
	g.waitUntil(t, wait, "partition lost", func(f *fakeGroup) bool { return len(f.loses) > 0 })
	// Re-assigned with nothing committed: everything is delivered again,
	// which needs the partition resumed.
	g.waitUntil(t, wait, "re-delivery of all 300 records", func(f *fakeGroup) bool {
		return len(f.assigns) >= 2 && f.next[TP{Topic: "in", Partition: 0}] == 300
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
