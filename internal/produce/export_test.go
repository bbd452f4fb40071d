package produce

// ReportBufferFor is reportBuffer, for the tests of package produce_test.
var ReportBufferFor = reportBuffer
