package produce

// ReportBufferFor is reportBuffer, for the tests of package produce_test.
var ReportBufferFor = reportBuffer

// StagesRunning is how many Produce stages tr counts as running, for the
// tests of package produce_test.
func StagesRunning(tr *Tracker) int64 { return tr.stages.Load() }
