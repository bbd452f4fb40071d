package source

import (
	"strings"
	"testing"
)

// Bad LeadersConfig fields are errors naming them: the brokers and groups
// as internal/rebalance.CheckLeadersConfig (whose test checks each kind of
// mistake), the client's own options here.
func TestNewLeadersErrors(t *testing.T) {
	b := []string{"localhost:9092"}
	for _, tc := range []struct {
		name string
		cfg  LeadersConfig
		want string
	}{
		{"no brokers", LeadersConfig{Groups: []string{"a"}}, "LeadersConfig.Brokers is empty"},
		{"no groups", LeadersConfig{Brokers: b}, "LeadersConfig.Groups is empty"},
		{"bootstrap override", LeadersConfig{Brokers: b, Groups: []string{"a"}, Overrides: map[string]any{"bootstrap.servers": "x:1"}}, `LeadersConfig.Overrides["bootstrap.servers"] cannot be set`},
		{"bad value", LeadersConfig{Brokers: b, Groups: []string{"a"}, Overrides: map[string]any{"socket.timeout.ms": 1.5}}, `Overrides["socket.timeout.ms"] = 1.5`},
		{"unknown property", LeadersConfig{Brokers: b, Groups: []string{"a"}, Overrides: map[string]any{"no.such.property": 1}}, "no.such.property"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLeaders(tc.cfg)
			if err == nil {
				l.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewLeaders: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
