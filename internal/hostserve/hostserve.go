// Package hostserve says where sbx serve is on a host when nothing says
// otherwise: its data dir, the admin key file it writes there and the
// address of its API. serve (package server) starts there; the CLI's client
// verbs look there for the server and its key, without importing serve.
package hostserve

// DataDir is where serve keeps its state when not told otherwise.
const DataDir = "/var/lib/sbx"

// KeyFile is the name, inside the data directory, of the admin API key file.
const KeyFile = "admin.key"

// Listen is the API's default address.
const Listen = "127.0.0.1:7070"
