package source

// NewTestSource is newSource, for the package's external tests.
var NewTestSource = newSource
