// Package producertest checks that a Kafka producer backend (package
// sink/confluent on librdkafka, package franz on franz-go) keeps the
// producer contract (sink.Producer, through sink.Produce and the
// producer's DeadLetter and Close) the runtime relies on, in the spirit of
// testing/slogtest and of testkit/sourcetest. A backend's test is one
// call:
//
//	func TestProducerConformance(t *testing.T) { producertest.Run(t, harness) }
//
// where the [Harness] gives what differs between backends: how a producer
// is made on a broker's addresses, the source consuming the input, and how
// its errors name their causes.
//
// Every check is a subtest of t named for the clause of the contract it
// checks (the Clause constants), and every failure message begins with
// that clause ("dead letters: byte for byte with provenance headers: ...").
// Offsets are exact. The checks that inject broker faults run on kfake
// (kafkatest.NewKfake); the others on kafkatest.NewBroker, so on Apache
// Kafka when SLUICE_TEST_BROKER=apache.
package producertest

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/testkit"
	"github.com/sluice-go/sluice/testkit/kafkatest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
)

// Harness is what the suite needs of a producer backend beyond the
// sink.Producer contract, which the suite exercises as every program does
// (sink.Produce, DeadLetter, Close). P is its producer type
// (*confluent.Producer, *franz.Producer). Every field is required but
// InjectFatal and Errors.IsInvalidRecord.
type Harness[P sink.Producer] struct {
	// Name is the package name that begins the producer's errors
	// ("confluent": "confluent: the producer is closed").
	Name string

	// NewProducer makes a producer of cfg. The suite closes it.
	NewProducer func(cfg Config) (P, error)

	// Unstarted returns a zero producer value, not made by NewProducer
	// (such as &confluent.Producer{}), for builds that fail before using
	// it.
	Unstarted func() P

	// Pending returns how many messages p handed to its client whose
	// delivery report nobody has read yet.
	Pending func(P) int64

	// ErrClosed is the error the producer's calls wrap once it is closed.
	ErrClosed error

	// NewSource returns a source consuming topic as a member of group on
	// the cluster at brokers, committing every 50 ms, with heartbeats fast
	// enough for tests ([SourceOf] adapts a constructor returning the
	// backend's own source type).
	NewSource func(t testing.TB, brokers []string, group, topic string) sluice.Source

	// SourceName is the package name that begins the source's errors
	// ("source" for source.Source, "franz" for franz.Source).
	SourceName string

	// Errors says how the client's errors name their causes.
	Errors Errors

	// InjectFatal, when set, makes p's client fail fatally (as librdkafka
	// does when an idempotent producer's sequence breaks); Errors.Fatal
	// names that error.
	InjectFatal func(p P)
}

// SourceOf adapts a backend's source constructor, which returns its own
// source type, to Harness.NewSource.
func SourceOf[S sluice.Source](newSource func(t testing.TB, brokers []string, group, topic string) S) func(t testing.TB, brokers []string, group, topic string) sluice.Source {
	return func(t testing.TB, brokers []string, group, topic string) sluice.Source {
		t.Helper()
		return newSource(t, brokers, group, topic)
	}
}

// SourceGroup is the group config of the sources Harness.NewSource
// returns and the backends' own tests use: group consuming topic on
// brokers, committing every 50 ms.
func SourceGroup(brokers []string, group, topic string) sluice.GroupConfig {
	return sluice.GroupConfig{Brokers: brokers, Group: group, Topics: []string{topic}, CommitInterval: 50 * time.Millisecond}
}

// Config is a producer the suite asks for, in terms every backend maps to
// its own settings. Zero fields keep the backend's defaults.
type Config struct {
	Brokers []string
	// CloseTimeout bounds Close (ProducerConfig.CloseTimeout).
	CloseTimeout time.Duration
	// DeliveryTimeout is how long a message may go undelivered before its
	// delivery fails (franz: ProducerConfig.DeliveryTimeout; librdkafka:
	// message.timeout.ms).
	DeliveryTimeout time.Duration
	// SkipTopicCheck is ProducerConfig.SkipTopicCheck.
	SkipTopicCheck bool
	// MaxMessageBytes is the largest message the client sends (franz:
	// kgo.ProducerBatchMaxBytes; librdkafka: message.max.bytes).
	MaxMessageBytes int
	// UnknownTopicFailsFast makes a delivery to a topic that does not
	// exist fail after one metadata refresh instead of the client's
	// default patience (kgo.UnknownTopicRetries(1);
	// topic.metadata.propagation.max.ms 100).
	UnknownTopicFailsFast bool
	// FastRetries makes the client retry a failed produce request after
	// about 20 ms instead of its default backoff.
	FastRetries bool
}

// Errors are the texts by which the client's errors name their causes,
// each a substring of the error Run returns.
type Errors struct {
	// TooLarge: a message larger than the client sends.
	TooLarge string
	// UnknownTopic: the topic does not exist.
	UnknownTopic string
	// InvalidRecord: the broker answered INVALID_RECORD.
	InvalidRecord string
	// TimedOut: a message not delivered within the delivery timeout d.
	TimedOut func(d time.Duration) string
	// Fatal: the fatal error of InjectFatal.
	Fatal string
	// IsInvalidRecord, when set, reports whether err wraps the client's
	// INVALID_RECORD error value.
	IsInvalidRecord func(err error) bool
}

// wait bounds every wait on a broker or a Run.
const wait = 60 * time.Second

// Run runs every check of the producer contract against h, each as a
// subtest of t named for its clause.
func Run[P sink.Producer](t *testing.T, h Harness[P]) {
	s := &suite[P]{h: h}
	for _, group := range clauses[P]() {
		t.Run(group.clause, func(t *testing.T) {
			t.Parallel()
			for _, c := range group.checks {
				t.Run(c.name, func(t *testing.T) {
					if c.parallel {
						t.Parallel()
					}
					c.fn(s, clauseT(t, group.clause))
				})
			}
		})
	}
}

// suite holds the harness for the checks.
type suite[P sink.Producer] struct {
	h Harness[P]
}

// newProducer makes a producer of cfg with [Open].
func (s *suite[P]) newProducer(t *T, cfg Config) P {
	t.Helper()
	return Open(t, func() (P, error) { return s.h.NewProducer(cfg) })
}

// Open returns the producer newP makes, failing t if it fails, and closes
// it when the test ends: after Run returned (cleanups run last in first
// out) every delivery was reported, so Close has nothing to give up on
// and must return nil.
func Open[P sink.Producer](t testing.TB, newP func() (P, error)) P {
	t.Helper()
	p, err := newP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close after Run returned = %v, want nil", err)
		}
	})
	return p
}

// setUp creates on b the topics of [createTopics] and returns a producer
// to b that retries fast: what most checks start with.
func (s *suite[P]) setUp(t *T, b *kafkatest.Broker, parts int32, n int, out string, outParts int32) P {
	t.Helper()
	createTopics(t, b, parts, n, out, outParts)
	return s.newProducer(t, Config{Brokers: b.Addrs(), FastRetries: true})
}

// produceTo is a builder producing every record to topic with p.
func (s *suite[P]) produceTo(p P, topic string, opts ...stages.CallOption) pipeline.Builder {
	return func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, p, topic, ToMessage, opts...)
	}
}

// start runs build (with opts) on the harness's source, a member of group
// "g" consuming "in" on b.
func (s *suite[P]) start(t *T, b *kafkatest.Broker, build pipeline.Builder, opts ...pipeline.Option) *testkit.Running {
	t.Helper()
	return testkit.Start(t, s.h.NewSource(t, b.Addrs(), "g", "in"), build, opts...)
}

// drain runs build (with opts) until group "g" has committed each of the
// parts partitions of "in" exactly to n, then stops Run and fails the test
// unless it returns nil.
func (s *suite[P]) drain(t *T, b *kafkatest.Broker, parts int32, n int64, build pipeline.Builder, opts ...pipeline.Option) {
	t.Helper()
	r := s.start(t, b, build, opts...)
	want := map[int32]int64{}
	for part := range parts {
		want[part] = n
	}
	WaitCommitted(t, b, r, "g", "in", want)
	Stop(t, r)
}
