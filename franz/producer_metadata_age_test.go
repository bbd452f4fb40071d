package franz

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The producer's clients ask for metadata at most every
// DefaultProducerMetadataMinAge (a partition that refused a write without
// naming its leader is retried once kgo learns where it went), unless the
// user's options say otherwise.
func TestProducerClientsMetadataMinAge(t *testing.T) {
	t.Parallel()
	minAge := func(t *testing.T, opts []kgo.Opt) time.Duration {
		t.Helper()
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.OptValue(kgo.MetadataMinAge).(time.Duration)
	}
	brokers := []string{"127.0.0.1:1"}
	opts, err := producerOpts(ProducerConfig{Brokers: brokers}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if got := minAge(t, opts); got != DefaultProducerMetadataMinAge {
		t.Errorf("NewProducer's client: MetadataMinAge %v, want %v", got, DefaultProducerMetadataMinAge)
	}
	opts, err = producerOpts(ProducerConfig{Brokers: brokers, Opts: []kgo.Opt{kgo.MetadataMinAge(3 * time.Second)}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if got := minAge(t, opts); got != 3*time.Second {
		t.Errorf("NewProducer's client with kgo.MetadataMinAge(3s) in ProducerConfig.Opts: MetadataMinAge %v, want 3s", got)
	}
	txn := append(TransactionalConfig{}.defaultClientOpts(), kgo.SeedBrokers(brokers...))
	if got := minAge(t, txn); got != DefaultProducerMetadataMinAge {
		t.Errorf("the transactional producer's client: MetadataMinAge %v, want %v", got, DefaultProducerMetadataMinAge)
	}
}
