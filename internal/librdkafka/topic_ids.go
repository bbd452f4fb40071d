package librdkafka

import (
	"context"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TopicIDs returns the current topic ID of each of names that exists, as
// the cluster's DescribeTopics answers it on the librdkafka handle newAdmin
// shares (see Describe). A topic that does not exist, whose description
// carries an error, or whose ID is the all-zero one (a broker without
// topic IDs) is absent from the map; an error of the whole request returns
// it and no map. ctx bounds the request.
func TopicIDs(ctx context.Context, newAdmin func() (*kafka.AdminClient, error), names []string) (map[string]string, error) {
	descs, err := describeTopics(ctx, newAdmin, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(descs))
	for _, d := range descs {
		id := d.TopicID.String()
		if d.Error.Code() != kafka.ErrNoError || id == "" || id == zeroTopicID {
			continue
		}
		out[d.Name] = id
	}
	return out, nil
}

// zeroTopicID is the base64 form of the all-zero topic ID, which stands
// for no ID.
const zeroTopicID = "AAAAAAAAAAAAAAAAAAAAAA"
