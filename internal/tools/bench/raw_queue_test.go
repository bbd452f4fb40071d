package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/source"
	"github.com/sluice-go/sluice/stages"
)

// The raw librdkafka loops get the prefetch queue package source gives
// librdkafka at pipeline's default budget, so that the two differ only in
// what Sluice does with the records.
func TestRawLoopsShareTheSourcesPrefetchQueue(t *testing.T) {
	var buf bytes.Buffer
	src, err := source.NewSource(source.Config{
		GroupConfig: sluice.GroupConfig{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"t"},
			CloseTimeout: 200 * time.Millisecond,
			Logger:       slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Run creates the client, then shuts down at once
	_ = pipeline.Run(ctx, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(in)
	})
	var line string
	for l := range strings.Lines(buf.String()) {
		if strings.Contains(l, "creating consumer") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no \"creating consumer\" log in:\n%s", buf.String())
	}
	cm := rawConsumerConfig(runConfig{brokers: []string{"127.0.0.1:1"}, group: "g"})
	for _, key := range []string{"queued.max.messages.kbytes", "queued.min.messages"} {
		if want := fmt.Sprintf("%s=%v ", key, cm[key]); !strings.Contains(line, want) {
			t.Errorf("the source configured librdkafka with %s; the raw loops have %s", line, want)
		}
	}
}
