//go:build integration

package testlane

// Integration is true in a test binary built with -tags integration.
const Integration = true
