package main

import (
	"strings"
	"testing"
)

func TestParseTopicsNamesWhatIsWrong(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"events", `"events" is not name:partitions`},
		{"events:0", `"events:0": partitions must be a positive number`},
		{"events:x", `"events:x": partitions must be a positive number`},
		{":3", `":3" is not name:partitions`},
	} {
		if _, err := parseTopics(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseTopics(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	got, err := parseTopics("a:1, b:8")
	if err != nil || len(got) != 2 || got[0] != (topicSpec{"a", 1}) || got[1] != (topicSpec{"b", 8}) {
		t.Fatalf("parseTopics = %v, %v", got, err)
	}
	if got, err := parseTopics(""); err != nil || len(got) != 0 {
		t.Fatalf("parseTopics(\"\") = %v, %v", got, err)
	}
}

func TestNodesMustBePositive(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"-nodes", "0", "-topics", ""}, &out); err == nil || !strings.Contains(err.Error(), "-nodes=0") {
		t.Fatalf("run -nodes 0 = %v", err)
	}
}
