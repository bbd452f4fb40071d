package franz

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/topiccheck"
)

// describeWith is the topic lookup of the start checks on cl: a metadata
// request through kadm, which never asks the broker to create a topic.
func describeWith(cl *kgo.Client) topiccheck.Describe {
	return func(ctx context.Context, names []string) (map[string]error, error) {
		details, err := kadm.NewClient(cl).ListTopics(ctx, names...)
		if err != nil {
			return nil, err
		}
		out := make(map[string]error, len(details))
		for name, d := range details {
			switch {
			case d.Err == nil:
				out[name] = nil
			case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
				out[name] = topiccheck.ErrUnknown
			default:
				out[name] = d.Err
			}
		}
		return out, nil
	}
}

// checkInputTopics returns an error naming the topics that do not exist
// (given in field, "Config.Topics"; skip names the field that turns the
// check off), looked up with a client of opts that consumes nothing: kgo
// joins a group only once it knows topics to consume, so a source checks
// before its own client exists. opts carry the user's (TLS, SASL) and
// the group (kgo refuses group options without one). A client kgo
// refuses, or a cluster that does not answer, is logged and no error:
// the source's own client reports it.
func checkInputTopics(ctx context.Context, log *slog.Logger, field, skip string, topics []string, opts []kgo.Opt) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		log.Warn("could not check that the topics exist; going on", "topics", topics, "err", err)
		return nil
	}
	defer cl.Close()
	check := make([]topiccheck.Topic, len(topics))
	for i, t := range topics {
		check[i] = topiccheck.Topic{Name: t, Role: "input topic", Given: field}
	}
	return topiccheck.Check(ctx, "franz", skip, check, describeWith(cl), log)
}

// probeOpts returns the options of the probe client checkInputTopics
// uses: the user's, the seed brokers and group.
func probeOpts(user []kgo.Opt, brokers []string, group kgo.Opt) []kgo.Opt {
	return append(slices.Clone(user), kgo.SeedBrokers(brokers...), group)
}
