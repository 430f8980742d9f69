// Command pgping is what TestPodPostgres runs in a gVisor pod: it connects
// to the PostgreSQL URL in $DSN, writes a row that the test then reads from
// the host, and prints "pgping: ok" and the server's version.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, os.Getenv("DSN"))
	if err != nil {
		fail(err)
	}
	defer c.Close(ctx)
	var version string
	if err := c.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		fail(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE pgping (said text); INSERT INTO pgping VALUES ('from a pod')"); err != nil {
		fail(err)
	}
	fmt.Printf("pgping: ok: %s\n", version)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pgping:", err)
	os.Exit(1)
}
