package source

import (
	"context"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/librdkafka"
	"github.com/sluice-go/sluice/internal/topiccheck"
)

// checkTopics returns an error naming the topics of Config.Topics that do
// not exist (regular expressions are not checked), unless
// Config.SkipTopicCheck; see internal/topiccheck. Run calls it before it
// subscribes.
func (r *runner) checkTopics(ctx context.Context) error {
	if r.k.cfg.SkipTopicCheck {
		return nil
	}
	var topics []topiccheck.Topic
	for _, t := range r.k.cfg.Topics {
		if !strings.HasPrefix(t, "^") {
			topics = append(topics, topiccheck.Topic{Name: t, Role: "input topic", Given: "Config.Topics"})
		}
	}
	describe := librdkafka.Describe(func() (*kafka.AdminClient, error) { return kafka.NewAdminClientFromConsumer(r.c) })
	return topiccheck.Check(ctx, "source", "Config.SkipTopicCheck", topics, describe, r.log)
}
