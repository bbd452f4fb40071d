package franz

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/kafkadriver"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// The client a transactional producer shares with its source asks for
// metadata at most every DefaultProducerMetadataMinAge, unless the
// user's kgo.MetadataMinAge says otherwise: in the source's Config.Opts
// or in ProducerConfig.Opts (the producer's, given after the source's,
// wins over both).
func TestTransactionalSharedClientMetadataMinAge(t *testing.T) {
	for _, tc := range []struct {
		name             string
		source, producer []kgo.Opt
		want             time.Duration
	}{
		{"default", nil, nil, DefaultProducerMetadataMinAge},
		{"source's Config.Opts", []kgo.Opt{kgo.MetadataMinAge(3 * time.Second)}, nil, 3 * time.Second},
		{"ProducerConfig.Opts", nil, []kgo.Opt{kgo.MetadataMinAge(2 * time.Second)}, 2 * time.Second},
		{"both", []kgo.Opt{kgo.MetadataMinAge(3 * time.Second)}, []kgo.Opt{kgo.MetadataMinAge(2 * time.Second)}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := kafkatest.NewKfake(t)
			b.CreateTopic(t, "orders", 1)
			src, err := NewSource(Config{GroupConfig: sluice.GroupConfig{Brokers: b.Addrs(), Group: "g", Topics: []string{"orders"},
				CloseTimeout: 5 * time.Second, Logger: kafkatest.Logger(t)}, Opts: tc.source})
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewTransactionalProducer(src, TransactionalConfig{TransactionConfig: sink.TransactionConfig{TransactionalID: "age-1"},
				ProducerConfig: ProducerConfig{Opts: tc.producer}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			cancel, done := startRun(t, src, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
				return stages.Discard(in)
			})
			ctx, stop := context.WithTimeout(context.Background(), kafkadriver.RecreateWait)
			defer stop()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for !p.txn.attached.Load() {
				select {
				case err := <-done:
					t.Fatalf("Run returned %v before the producer was given the shared client", err)
				case <-ctx.Done():
					t.Fatal("the producer was not given the shared client")
				case <-tick.C:
				}
			}
			if got := p.cl.OptValue(kgo.MetadataMinAge); got != tc.want {
				t.Errorf("the shared client's MetadataMinAge = %v, want %v", got, tc.want)
			}
			stopRun(t, cancel, done)
		})
	}
}
