package pipeline_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// runWith returns Run's error for opts. Bad options make Run return before
// the source starts; good ones run it on a cancelled context, so Run
// returns nil at once.
func runWith(opts ...pipeline.Option) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return pipeline.Run(ctx, testkit.NewFake(), func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(in)
	}, opts...)
}

func TestDeadLetterLimitRejectsRatiosThatAreNotWithinZeroAndOne(t *testing.T) {
	for _, ratio := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.1, 1.5} {
		err := runWith(pipeline.WithDeadLetterLimit(sluice.DeadLetterLimit{MaxRatio: ratio}))
		if err == nil || !strings.Contains(err.Error(), "WithDeadLetterLimit: MaxRatio") {
			t.Errorf("MaxRatio %v: Run returned %v, want an error naming WithDeadLetterLimit and MaxRatio", ratio, err)
		}
	}
	err := runWith(pipeline.WithDeadLetterLimit(sluice.DeadLetterLimit{MaxConsecutive: -1, Window: -2}))
	if err == nil || !strings.Contains(err.Error(), "MaxConsecutive -1") || !strings.Contains(err.Error(), "Window -2") {
		t.Errorf("Run returned %v, want errors naming MaxConsecutive and Window", err)
	}
}
