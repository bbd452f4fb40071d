package rebalance

import "testing"

// The broker and leader-group checks name the field and the element.
func TestCheckBrokersAndLeaderGroups(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no brokers", CheckBrokers("p", "X.Brokers", nil), "p: X.Brokers is empty"},
		{"blank broker", CheckBrokers("p", "X.Brokers", []string{"a:1", " "}), `p: X.Brokers[1] = " ": want one host:port`},
		{"broker list", CheckBrokers("p", "X.Brokers", []string{"a:1,b:2"}), `p: X.Brokers[0] = "a:1,b:2": want one host:port`},
		{"no groups", CheckLeaderGroups("p", "X.Groups", nil), "p: X.Groups is empty: name at least one leader group"},
		{"blank group", CheckLeaderGroups("p", "X.Groups", []string{"a", ""}), "p: X.Groups[1] is empty"},
		{"space group", CheckLeaderGroups("p", "X.Groups", []string{"a", " "}), "p: X.Groups[1] is empty"},
		{"repeated group", CheckLeaderGroups("p", "X.Groups", []string{"a", "b", "a"}), `p: X.Groups[2] = "a" repeats X.Groups[0]`},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	if err := CheckBrokers("p", "X.Brokers", []string{"a:1", "b:2"}); err != nil {
		t.Errorf("valid brokers: %v", err)
	}
	if err := CheckLeaderGroups("p", "X.Groups", []string{"a", "b"}); err != nil {
		t.Errorf("valid groups: %v", err)
	}
}
