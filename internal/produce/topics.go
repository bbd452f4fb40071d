package produce

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/topiccheck"
)

// Topics checks, once per topic and role, that the topics a producer
// writes to exist (the dead-letter topic when Run starts, a Produce
// stage's output topic when the first graph using it is built; see
// internal/topiccheck). A backend creates one per producer and hands it
// to the core through its Client's Topics method (see [TopicChecker]).
// It is safe for concurrent use; a nil *Topics checks nothing.
type Topics struct {
	names    Names
	skip     bool   // the user turned the check off
	skipName string // the field that does ("ProducerConfig.SkipTopicCheck")
	describe topiccheck.Describe
	log      *slog.Logger

	mu   sync.Mutex // held during a check: each topic is looked up once
	done map[topiccheck.Topic]error
}

// NewTopics returns the topic checks of a producer whose errors use
// names: describe looks topics up, skip (the value of the field named
// skipName) turns every check off, log gets what could not be told.
func NewTopics(names Names, skip bool, skipName string, describe topiccheck.Describe, log *slog.Logger) *Topics {
	return &Topics{names: names, skip: skip, skipName: skipName, describe: describe, log: log, done: make(map[topiccheck.Topic]error)}
}

// TopicChecker is implemented by a backend's Client whose producer checks
// its topics (the Client interface does not require it).
type TopicChecker interface {
	Topics() *Topics
}

// topicsOf returns the topic checks of c, or nil.
func topicsOf(c any) *Topics {
	if tc, ok := c.(TopicChecker); ok {
		return tc.Topics()
	}
	return nil
}

// check returns an error when topic, written to in role (given by the
// user in given), does not exist; see topiccheck.Check. The outcome is
// kept: the next check of the same topic, role and given returns it
// without asking the cluster.
func (t *Topics) check(ctx context.Context, topic, role, given string) error {
	if t == nil || t.skip {
		return nil
	}
	key := topiccheck.Topic{Name: topic, Role: role, Given: given}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err, ok := t.done[key]; ok {
		return err
	}
	err := topiccheck.Check(ctx, t.names.Package, t.skipName, []topiccheck.Topic{key}, t.describe, t.log)
	t.done[key] = err
	return err
}

// startCheckKey marks the context of a dead-letter destination's call
// made by [CheckStart]: the call runs the start check instead of
// producing.
type startCheckKey struct{}

// CheckedDeadLetter returns the dead-letter destination of topic on c
// ([DeadLetter]), which also answers [CheckStart]: an empty topic is an
// error naming name (the user's method, "sink: Producer.DeadLetter"), and
// a topic that does not exist is one naming it and its role. It is the
// whole of the backends' Producer.DeadLetter.
func CheckedDeadLetter(c Client, tr *Tracker, name, topic string) func(context.Context, sluice.DeadLetter) error {
	send := DeadLetter(c, tr, name, topic)
	topics := topicsOf(c)
	return func(ctx context.Context, dl sluice.DeadLetter) error {
		if ctx.Value(startCheckKey{}) == nil {
			return send(ctx, dl)
		}
		if topic == "" {
			return fmt.Errorf("%s: the topic is empty", name)
		}
		return topics.check(ctx, topic, "dead-letter topic", "Producer.DeadLetter")
	}
}

// CheckStart runs the start check of f, a destination made by
// [CheckedDeadLetter]: it is the backends' DeadLetterFunc.CheckStart,
// which pipeline.Run calls before the source starts.
func CheckStart(ctx context.Context, f func(context.Context, sluice.DeadLetter) error) error {
	return f(context.WithValue(ctx, startCheckKey{}, true), sluice.DeadLetter{})
}

// checkOutput is the Produce stage's build-time check of its topic (see
// Stage): a topic that does not exist fails the build.
func checkOutput(c any, name, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), topiccheck.Timeout)
	defer cancel()
	return topicsOf(c).check(ctx, topic, "output topic", name)
}
