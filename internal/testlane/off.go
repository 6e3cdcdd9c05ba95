//go:build !integration

package testlane

// Integration is false in the fast lane (no -tags integration).
const Integration = false
