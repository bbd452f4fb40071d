package kafkadriver

import (
	"strings"
	"testing"
)

// ConfigError is a config that a constructor must refuse: Want is a part
// of the error it must return, Name the subtest's name.
type ConfigError[C any] struct {
	Name   string
	Config C
	Want   string
}

// WantConfigErrors runs a subtest of t for each of cases: newFn of the
// case's Config must return an error containing its Want. What newFn
// made despite returning no error is closed.
func WantConfigErrors[C any, V interface{ Close() }](t *testing.T, newFn func(C) (V, error), cases []ConfigError[C]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			v, err := newFn(tc.Config)
			if err == nil {
				v.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.Want) {
				t.Fatalf("%v, want an error containing %q", err, tc.Want)
			}
		})
	}
}
