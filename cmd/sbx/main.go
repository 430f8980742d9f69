// Command sbx is the sbx sandbox platform: server, CLI and (later) agent in one static binary.
package main

import (
	"os"

	"github.com/sbxdev/sbx/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
