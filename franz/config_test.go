package franz

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func validConfig() Config {
	return Config{GroupConfig: sluice.GroupConfig{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"t"}}}
}

func TestNewSourceRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }, "Config.Brokers is empty"},
		{"comma broker", func(c *Config) { c.Brokers = []string{"a:1,b:2"} }, "Config.Brokers[0]"},
		{"no group", func(c *Config) { c.Group = " " }, "Config.Group is empty"},
		{"no topics", func(c *Config) { c.Topics = nil }, "Config.Topics is empty"},
		{"empty topic", func(c *Config) { c.Topics = []string{"a", ""} }, "Config.Topics[1] is empty"},
		{"negative interval", func(c *Config) { c.CommitInterval = -1 }, "Config.CommitInterval"},
		{"tiny interval", func(c *Config) { c.CommitInterval = time.Microsecond }, "at least 1ms"},
		{"negative close", func(c *Config) { c.CloseTimeout = -1 }, "Config.CloseTimeout"},
		{"tiny close", func(c *Config) { c.CloseTimeout = time.Millisecond }, "at least 100ms"},
		{"nil opt", func(c *Config) { c.Opts = []kgo.Opt{nil} }, "Config.Opts[0] is nil"},
		{"kgo rejects", func(c *Config) { c.Opts = []kgo.Opt{kgo.TransactionalID("")} }, "franz: Config.Opts: invalid empty transactional id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.mod(&cfg)
			_, err := NewSource(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewSource = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Every option the source relies on is refused, by name.
func TestNewSourceRefusesReservedOpts(t *testing.T) {
	noop := func(context.Context, *kgo.Client, map[string][]int32) {}
	for name, opt := range map[string]kgo.Opt{
		"SeedBrokers":                 kgo.SeedBrokers("other:9092"),
		"ConsumerGroup":               kgo.ConsumerGroup("other"),
		"ConsumeTopics":               kgo.ConsumeTopics("other"),
		"ConsumeRegex":                kgo.ConsumeRegex(),
		"ConsumePartitions":           kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset()}}),
		"ShareGroup":                  kgo.ShareGroup("s"),
		"GroupProtocol":               kgo.GroupProtocol("custom"),
		"DisableAutoCommit":           kgo.DisableAutoCommit(),
		"AutoCommitInterval":          kgo.AutoCommitInterval(time.Minute),
		"AutoCommitMarks":             kgo.AutoCommitMarks(),
		"GreedyAutoCommit":            kgo.GreedyAutoCommit(),
		"AutoCommitCallback":          kgo.AutoCommitCallback(func(*kgo.Client, *kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse, error) {}),
		"OnPartitionsAssigned":        kgo.OnPartitionsAssigned(noop),
		"OnPartitionsRevoked":         kgo.OnPartitionsRevoked(noop),
		"OnPartitionsLost":            kgo.OnPartitionsLost(noop),
		"OnPartitionsCallbackBlocked": kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) {}),
		"BlockRebalanceOnPoll":        kgo.BlockRebalanceOnPoll(),
		"AdjustFetchOffsetsFn": kgo.AdjustFetchOffsetsFn(func(_ context.Context, m map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
			return m, nil
		}),
		"WithLogger": kgo.WithLogger(kgo.BasicLogger(io.Discard, kgo.LogLevelInfo, nil)),
		"WithPools":  kgo.WithPools(new(recordPool)),
	} {
		t.Run(name, func(t *testing.T) {
			cfg := validConfig()
			cfg.Opts = []kgo.Opt{kgo.FetchMaxWait(time.Second), opt}
			_, err := NewSource(cfg)
			if err == nil || !strings.Contains(err.Error(), "kgo."+name) || !strings.Contains(err.Error(), "cannot be set") {
				t.Fatalf("NewSource with kgo.%s = %v, want an error naming it", name, err)
			}
		})
	}
}

// Options Sluice does not rely on pass through.
func TestNewSourceAcceptsOtherOpts(t *testing.T) {
	cfg := validConfig()
	cfg.Opts = []kgo.Opt{
		kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(7 * time.Second),
		kgo.FetchMaxBytes(1 << 20), kgo.ClientID("me"), kgo.InstanceID("i-1"), kgo.ServerSideBalancer(),
	}
	s, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.ut.session != 7*time.Second || s.ut.rebalance != 0 || s.ut.heartbeat != 0 {
		t.Fatalf("timeouts read from Opts = %+v, want session 7s only", s.ut)
	}
}

func TestGroupTimeouts(t *testing.T) {
	drain := 20 * time.Second
	probe := func(opts []kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	for _, tc := range []struct {
		name                          string
		user                          userTimeouts
		drain                         time.Duration
		rebalance, session, heartbeat time.Duration // 0: not checked
		why                           string
	}{
		// 20s drain + 4s (40% of the 10s CloseTimeout) + 6s.
		{"derived", userTimeouts{}, drain, 30 * time.Second, 10 * time.Second, 3 * time.Second, "20s drain + 4s + 6s"},
		{"user session", userTimeouts{session: 40 * time.Second}, time.Second, 40 * time.Second, 0, 3 * time.Second, "the session timeout, above 1s+4s+6s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := validConfig().groupTimeouts(tc.user, tc.drain)
			if err != nil {
				t.Fatal(err)
			}
			cl := probe(opts)
			for _, c := range []struct {
				name string
				opt  any
				want time.Duration
			}{
				{"RebalanceTimeout", kgo.RebalanceTimeout, tc.rebalance},
				{"SessionTimeout", kgo.SessionTimeout, tc.session},
				{"HeartbeatInterval", kgo.HeartbeatInterval, tc.heartbeat},
			} {
				if got := cl.OptValue(c.opt); c.want != 0 && got != c.want {
					t.Errorf("%s = %v, want %v (%s)", c.name, got, c.want, tc.why)
				}
			}
		})
	}
	t.Run("user rebalance too small", func(t *testing.T) {
		_, err := validConfig().groupTimeouts(userTimeouts{rebalance: 23 * time.Second}, drain)
		if err == nil || !strings.Contains(err.Error(), "kgo.RebalanceTimeout(23s) is below what a revoke needs") {
			t.Fatalf("err = %v, want one naming kgo.RebalanceTimeout", err)
		}
	})
}

// refusingGroup fails the test on any Group call but DrainTimeout.
type refusingGroup struct {
	sluice.Group
	t *testing.T
}

func (g refusingGroup) DrainTimeout() time.Duration { return 20 * time.Second }

// A contradicting kgo.RebalanceTimeout makes Run fail before any other
// Group call (the embedded Group is nil: any other call panics).
func TestRunRefusesSmallRebalanceTimeout(t *testing.T) {
	cfg := validConfig()
	cfg.Opts = []kgo.Opt{kgo.RebalanceTimeout(10 * time.Second)}
	s, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run(context.Background(), refusingGroup{t: t})
	if err == nil || !strings.Contains(err.Error(), "kgo.RebalanceTimeout(10s)") {
		t.Fatalf("Run = %v, want an error naming kgo.RebalanceTimeout", err)
	}
	if err := s.Run(context.Background(), refusingGroup{t: t}); err == nil || !strings.Contains(err.Error(), "called twice") {
		t.Fatalf("second Run = %v, want 'called twice'", err)
	}
}

// kgo.AdjustFetchOffsetsFn is the source's own: the error says where
// partitions start instead and points to Config.OffsetStore for another
// start offset.
func TestNewSourceRefusesAdjustFetchOffsetsFnForOffsetStore(t *testing.T) {
	cfg := validConfig()
	cfg.Opts = []kgo.Opt{kgo.AdjustFetchOffsetsFn(func(_ context.Context, m map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
		return m, nil
	})}
	_, err := NewSource(cfg)
	want := "franz: Config.Opts: kgo.AdjustFetchOffsetsFn cannot be set: the source sets it: partitions start at the group's committed offsets, or where Config.OffsetStore says"
	if err == nil || err.Error() != want {
		t.Fatalf("NewSource = %v, want %q", err, want)
	}
}
