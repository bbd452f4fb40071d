package franz

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
)

func validShareConfig() ShareConfig {
	return ShareConfig{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"t"}}
}

// Bad ShareConfig fields are errors naming the field (ShareConfig, not
// Config, though the rules are shared).
func TestNewShareSourceRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*ShareConfig)
		want string
	}{
		{"no brokers", func(c *ShareConfig) { c.Brokers = nil }, "franz: ShareConfig.Brokers is empty"},
		{"comma broker", func(c *ShareConfig) { c.Brokers = []string{"a:1,b:2"} }, "franz: ShareConfig.Brokers[0]"},
		{"no group", func(c *ShareConfig) { c.Group = " " }, "franz: ShareConfig.Group is empty"},
		{"no topics", func(c *ShareConfig) { c.Topics = nil }, "franz: ShareConfig.Topics is empty"},
		{"empty topic", func(c *ShareConfig) { c.Topics = []string{"a", ""} }, "franz: ShareConfig.Topics[1] is empty"},
		{"negative close", func(c *ShareConfig) { c.CloseTimeout = -1 }, "franz: ShareConfig.CloseTimeout"},
		{"tiny close", func(c *ShareConfig) { c.CloseTimeout = time.Millisecond }, "at least 100ms"},
		{"negative deliveries", func(c *ShareConfig) { c.MaxDeliveries = -1 }, "franz: ShareConfig.MaxDeliveries = -1"},
		{"nil opt", func(c *ShareConfig) { c.Opts = []kgo.Opt{nil} }, "franz: ShareConfig.Opts[0] is nil"},
		{"kgo refuses for a share group", func(c *ShareConfig) { c.Opts = []kgo.Opt{kgo.ConsumerGroup("other")} }, "franz: ShareConfig.Opts: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validShareConfig()
			tc.mod(&cfg)
			_, err := NewShareSource(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewShareSource = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Every option the share source sets itself is refused, by name.
func TestNewShareSourceRefusesReservedOpts(t *testing.T) {
	for name, opt := range map[string]kgo.Opt{
		"SeedBrokers":      kgo.SeedBrokers("other:9092"),
		"ShareGroup":       kgo.ShareGroup("other"),
		"ConsumeTopics":    kgo.ConsumeTopics("other"),
		"ConsumeRegex":     kgo.ConsumeRegex(),
		"ShareAckCallback": kgo.ShareAckCallback(func(*kgo.Client, kgo.ShareAckResults) {}),
		"WithLogger":       kgo.WithLogger(kgo.BasicLogger(nil, kgo.LogLevelInfo, nil)),
	} {
		t.Run(name, func(t *testing.T) {
			cfg := validShareConfig()
			cfg.Opts = []kgo.Opt{opt}
			_, err := NewShareSource(cfg)
			if want := "kgo." + name + " cannot be set"; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("NewShareSource = %v, want an error containing %q", err, want)
			}
		})
	}
	cfg := validShareConfig()
	cfg.Opts = []kgo.Opt{kgo.ShareMaxRecords(10), kgo.ClientID("x")}
	if _, err := NewShareSource(cfg); err != nil {
		t.Fatalf("NewShareSource with allowed options = %v", err)
	}
}

func TestShareConfigDefaults(t *testing.T) {
	c := validShareConfig()
	if got := c.maxDeliveries(); got != DefaultMaxDeliveries {
		t.Errorf("maxDeliveries() = %d, want %d", got, DefaultMaxDeliveries)
	}
	c.MaxDeliveries = 2
	if got := c.maxDeliveries(); got != 2 {
		t.Errorf("maxDeliveries() = %d, want 2", got)
	}
	if got := c.closeTimeout(); got != DefaultCloseTimeout {
		t.Errorf("closeTimeout() = %v, want %v", got, DefaultCloseTimeout)
	}
}

// plainGroup is a sluice.Group that is not a sluice.AckGroup.
type plainGroup struct{ sluice.Group }

// Run on a Group without share support is an error naming what it needs,
// before anything else; a second Run is an error.
func TestShareSourceRunNeedsAckGroup(t *testing.T) {
	src, err := NewShareSource(validShareConfig())
	if err != nil {
		t.Fatal(err)
	}
	err = src.Run(context.Background(), plainGroup{})
	if err == nil || !strings.Contains(err.Error(), "sluice.AckGroup") {
		t.Fatalf("Run = %v, want an error naming sluice.AckGroup", err)
	}
	if err := src.Run(context.Background(), plainGroup{}); err == nil || !strings.Contains(err.Error(), "called twice") {
		t.Fatalf("second Run = %v, want an error", err)
	}
}
