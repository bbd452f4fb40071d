package franz_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The share source checks its input topics before it joins the share
// group.
func TestShareSourceMissingInputTopicFailsRunBeforeJoining(t *testing.T) {
	t.Parallel()
	b := kafkatest.NewBroker(t)
	b.CreateTopic(t, "orders", 1)
	src, err := franz.NewShareSource(franz.ShareConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders", "ordres"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = pipeline.Run(ctx, src, discard)
	if !errors.Is(err, sluice.ErrMissingTopic) ||
		!strings.Contains(err.Error(), `franz: the input topic "ordres" (ShareConfig.Topics) does not exist: create it, or set ShareConfig.SkipTopicCheck to start without this check`) {
		t.Fatalf("Run = %v, want an error naming the missing input topic", err)
	}
}

// discard is a builder that drops every record.
func discard(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
	return stages.Discard(in)
}
