// Package topiccheck checks, when a consumer starts, that the topics it
// needs exist, so that a misspelt name fails at once with an error naming
// the topic and its role instead of at the first record that needs it
// (for a dead-letter topic, maybe days later, and then at every restart).
// It is shared by the Kafka clients (packages source, sink and franz), which
// look the topics up with their own client ([Describe]); it links no
// Kafka client itself.
package topiccheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-go/sluice"
)

// Timeout bounds one check. A cluster that does not answer in time is no
// error: the check logs that it could not tell and the consumer goes on
// (its client reports connection problems itself).
const Timeout = 10 * time.Second

// ErrUnknown is what a [Describe] reports for a topic the cluster says
// does not exist.
var ErrUnknown = errors.New("unknown topic")

// Describe looks names up on the cluster. For each name it reports nil
// when the topic exists, ErrUnknown when the cluster says it does not, or
// the error that kept it from telling (an authorization failure); err is
// the failure of the lookup as a whole. It must not create topics.
type Describe func(ctx context.Context, names []string) (map[string]error, error)

// Topic is one topic to check: its name, its role ("input topic",
// "dead-letter topic", ...) and where it was given ("Config.Topics",
// "Producer.DeadLetter", ...), for the error.
type Topic struct {
	Name  string
	Role  string
	Given string
}

// Check looks topics up with describe, within [Timeout] and ctx, and
// returns an error naming every one the cluster says does not exist, its
// role and where it was given, followed by the fix: create them, or set
// skip (the option that turns the check off, "Config.SkipTopicCheck").
// The error starts with prefix ("source", "sink", "franz") and wraps
// sluice.ErrMissingTopic. What cannot be told (no answer in time, an
// authorization failure) is logged as a warning on log and is no error;
// so is a ctx that ends during the check.
func Check(ctx context.Context, prefix, skip string, topics []Topic, describe Describe, log *slog.Logger) error {
	if len(topics) == 0 {
		return nil
	}
	names := make([]string, 0, len(topics))
	seen := make(map[string]bool, len(topics))
	for _, t := range topics {
		if !seen[t.Name] {
			seen[t.Name] = true
			names = append(names, t.Name)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	found, err := describe(cctx, names)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("could not check that the topics exist; going on", "topics", names, "err", err)
		}
		return nil
	}
	var missing []string
	for _, t := range topics {
		ferr, ok := found[t.Name]
		switch {
		case !ok:
			log.Warn("could not check that the topic exists: the cluster did not describe it; going on", "topic", t.Name, "role", t.Role)
		case errors.Is(ferr, ErrUnknown):
			missing = append(missing, fmt.Sprintf("the %s %q (%s) does not exist", t.Role, t.Name, t.Given))
		case ferr != nil:
			log.Warn("could not check that the topic exists; going on", "topic", t.Name, "role", t.Role, "err", ferr)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	it := "it"
	if len(missing) > 1 {
		it = "them"
	}
	return &missingError{msg: fmt.Sprintf("%s: %s: create %s, or set %s to start without this check",
		prefix, strings.Join(missing, "; "), it, skip)}
}

// missingError is Check's error: its text names the topics, and it is
// sluice.ErrMissingTopic for errors.Is.
type missingError struct{ msg string }

func (e *missingError) Error() string        { return e.msg }
func (e *missingError) Is(target error) bool { return target == sluice.ErrMissingTopic }
