package topiccheck

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/sluice-go/sluice"
)

func describeFrom(m map[string]error, err error) Describe {
	return func(context.Context, []string) (map[string]error, error) { return m, err }
}

func TestCheckNamesEveryMissingTopicAndTheFix(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	topics := []Topic{{"orderz", "input topic", "Config.Topics"}, {"ok", "input topic", "Config.Topics"}, {"dlqq", "input topic", "Config.Topics"}}
	err := Check(context.Background(), "source", "Config.SkipTopicCheck", topics,
		describeFrom(map[string]error{"orderz": ErrUnknown, "ok": nil, "dlqq": ErrUnknown}, nil), log)
	want := `source: the input topic "orderz" (Config.Topics) does not exist; the input topic "dlqq" (Config.Topics) does not exist: ` +
		`create them, or set Config.SkipTopicCheck to start without this check`
	if err == nil || err.Error() != want || !errors.Is(err, sluice.ErrMissingTopic) {
		t.Fatalf("Check = %v, want %s wrapping sluice.ErrMissingTopic", err, want)
	}
}

// What cannot be told is no error: the consumer goes on.
func TestCheckGoesOnWhenItCannotTell(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	topics := []Topic{{"a", "dead-letter topic", "Producer.DeadLetter"}}
	for name, d := range map[string]Describe{
		"request failed": describeFrom(nil, context.DeadlineExceeded),
		"not described":  describeFrom(map[string]error{}, nil),
		"not authorized": describeFrom(map[string]error{"a": errors.New("TOPIC_AUTHORIZATION_FAILED")}, nil),
		"topic is there": describeFrom(map[string]error{"a": nil}, nil),
	} {
		if err := Check(context.Background(), "sink", "ProducerConfig.SkipTopicCheck", topics, d, log); err != nil {
			t.Errorf("%s: Check = %v, want nil", name, err)
		}
	}
}
