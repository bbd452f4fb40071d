package source

import (
	"sync"

	"github.com/sluice-go/sluice/internal/librdkafka"
)

// init lets tests in this module wait for a source's background client
// calls without an exported method (see librdkafka.SourceBackground).
func init() {
	librdkafka.SourceBackground = func(src any) *sync.WaitGroup { return &src.(*Source).background }
}
