// Package layering holds the test of the module's layering: which package
// may import which (in the spirit of Tailscale's depaware), and that
// docs/ARCHITECTURE.md's package table names every package. It has no code.
package layering
