// Package sbx holds the domain of the sbx sandbox platform: sandboxes and their
// states, the timeline of internal steps, tenancy, the Provider contract that
// every isolation backend implements, and the error codes the API maps to HTTP.
//
// It imports no adapter: SQL lives in package ledger, HTTP in package httpapi,
// isolation engines in their provider packages, and wiring in package server.
package sbx
