// Package testpg gives a test an empty database of its own on a real
// PostgreSQL server: the one $SBX_TEST_POSTGRES names (a URL of a role that
// may create databases), by default the host's own through its Unix socket
// as the current user, as scripts/test.sh sets it up.
package testpg

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sbxdev/sbx/internal/testenv"
)

// DefaultServer is the server used when $SBX_TEST_POSTGRES is unset.
const DefaultServer = "postgres:///postgres?host=/var/run/postgresql"

// Server is the URL of the server the tests use: $SBX_TEST_POSTGRES, else
// DefaultServer.
func Server() string {
	if s := os.Getenv("SBX_TEST_POSTGRES"); s != "" {
		return s
	}
	return DefaultServer
}

// URL creates an empty database for t and answers its URL; the database is
// dropped when t ends. Without a server t is skipped (fails in CI).
func URL(t testing.TB) string {
	t.Helper()
	admin := Server()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("a PostgreSQL server at %s ($SBX_TEST_POSTGRES): %v", admin, err))
	}
	defer c.Close(ctx)
	name := "sbxtest_" + strings.ToLower(rand.Text()[:12])
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("dropping test database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("$SBX_TEST_POSTGRES: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
