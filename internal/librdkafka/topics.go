package librdkafka

import (
	"context"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice/internal/topiccheck"
)

// Describe returns the topic lookup of the start checks on the librdkafka
// handle of a consumer or producer: newAdmin makes an admin client sharing
// the handle (kafka.NewAdminClientFromConsumer or FromProducer). It asks
// DescribeTopics, which never creates a topic (a metadata request would
// with allow.auto.create.topics, a producer's default).
func Describe(newAdmin func() (*kafka.AdminClient, error)) topiccheck.Describe {
	return func(ctx context.Context, names []string) (map[string]error, error) {
		descs, err := describeTopics(ctx, newAdmin, names)
		if err != nil {
			return nil, err
		}
		out := make(map[string]error, len(descs))
		for _, d := range descs {
			switch d.Error.Code() {
			case kafka.ErrNoError:
				out[d.Name] = nil
			case kafka.ErrUnknownTopicOrPart, kafka.ErrUnknownTopic:
				out[d.Name] = topiccheck.ErrUnknown
			default:
				out[d.Name] = d.Error
			}
		}
		return out, nil
	}
}

// describeTopics asks DescribeTopics for names through an admin client
// made by newAdmin, which it closes (the admin client only: the handle is
// its owner's). ctx bounds the request.
func describeTopics(ctx context.Context, newAdmin func() (*kafka.AdminClient, error), names []string) ([]kafka.TopicDescription, error) {
	adm, err := newAdmin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	res, err := adm.DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames(names))
	if err != nil {
		return nil, err
	}
	return res.TopicDescriptions, nil
}
