package kafkatest

import "testing"

// Logger is nil (discard) unless EnvLog is set.
func TestLoggerOnlyWithEnvLog(t *testing.T) {
	t.Setenv(EnvLog, "")
	if l := Logger(t); l != nil {
		t.Errorf("Logger without %s = %v, want nil", EnvLog, l)
	}
	t.Setenv(EnvLog, "1")
	if l := Logger(t); l == nil {
		t.Errorf("Logger with %s=1 = nil, want a logger", EnvLog)
	}
}
