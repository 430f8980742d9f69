// Package ledger is the only owner of SQL in sbx: tenancy, API keys, the
// sandbox ledger and its timeline, credits. It runs the same statements on
// an embedded SQLite database (modernc.org/sqlite, WAL; writes go through
// one connection, so every write transaction is serialized) or on
// PostgreSQL (pgx; transactions run side by side, and rows a transaction
// reads to change are locked with FOR UPDATE).
package ledger

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/sbxdev/sbx/internal/seal"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations
var migrations embed.FS

// migrationLock is the PostgreSQL advisory lock key serve processes sharing
// a database take while they bring its schema up to date.
const migrationLock = 0x5b8_0001

// Store is the ledger.
type Store struct {
	w    *sql.DB // writes: the single SQLite writer connection, or the PostgreSQL pool
	r    *sql.DB // reads: a pool (on PostgreSQL, the same one)
	pg   bool
	seal *seal.Box

	prepared map[string]*sql.Stmt // SQLite: hotStatements, prepared on w
	reads    map[string]*sql.Stmt // SQLite: hotReads, prepared on r

	bell bell // rung after a commit that appended org events (events.go)

	held atomic.Value // the operation owner ID this process holds (leader.go's Hold)
}

// Open opens the ledger at dsn, creating it if needed, and brings its schema
// up to date: a postgres:// or postgresql:// URL is a PostgreSQL database,
// anything else the path of a SQLite file. key seals access tokens at rest.
func Open(ctx context.Context, dsn string, key []byte) (*Store, error) {
	box, err := seal.New(key)
	if err != nil {
		return nil, err
	}
	var s *Store
	if IsPostgres(dsn) {
		s, err = openPostgres(ctx, dsn)
	} else {
		s, err = openSQLite(dsn)
	}
	if err != nil {
		return nil, err
	}
	s.seal = box
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if !s.pg {
		if s.prepared, err = prepare(ctx, s.w, hotStatements); err == nil {
			s.reads, err = prepare(ctx, s.r, hotReads)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// prepare prepares qs on c, by text.
func prepare(ctx context.Context, c *sql.DB, qs []string) (map[string]*sql.Stmt, error) {
	out := map[string]*sql.Stmt{}
	for _, q := range qs {
		st, err := c.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range out {
				st.Close()
			}
			return nil, fmt.Errorf("ledger: preparing %q: %w", q, err)
		}
		out[q] = st
	}
	return out, nil
}

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

func openSQLite(file string) (*Store, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(10000)", "foreign_keys(1)"} {
		q.Add("_pragma", p)
	}
	dsn := "file:" + file + "?" + q.Encode()
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	return &Store{w: w, r: r}, nil
}

func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	pool, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	pool.SetMaxOpenConns(32)
	pool.SetMaxIdleConns(32)
	if err := pool.PingContext(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ledger: connecting to PostgreSQL: %w", err)
	}
	return &Store{w: pool, r: pool, pg: true}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	for _, st := range s.prepared {
		st.Close()
	}
	for _, st := range s.reads {
		st.Close()
	}
	if s.r == s.w {
		return s.w.Close()
	}
	return errors.Join(s.r.Close(), s.w.Close())
}

// migrate applies the embedded migrations of the store's dialect not yet
// recorded, each in its own transaction. On PostgreSQL it holds an advisory
// lock meanwhile, so that serve processes starting together take turns.
func (s *Store) migrate(ctx context.Context) error {
	dir := "migrations/sqlite"
	if s.pg {
		dir = "migrations/postgres"
	}
	c, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer c.Close()
	if s.pg {
		if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		defer c.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)
	}
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	names, err := fs.Glob(migrations, dir+"/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := path.Base(name)
		version, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("ledger: migration %s has no number", base)
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		if err := s.apply(ctx, c, version, string(body)); err != nil {
			return fmt.Errorf("ledger: migration %s: %w", base, err)
		}
	}
	return nil
}

// apply runs one migration unless it is recorded already.
func (s *Store) apply(ctx context.Context, c *sql.Conn, version int, body string) error {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	d := db{c: tx, pg: s.pg}
	var n int
	if err := d.row(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil || n > 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if version == resealVersion {
		if err := resealBound(ctx, d, s.seal); err != nil {
			return err
		}
	}
	if _, err := d.exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, version, time.Now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

// read is what a read runs on: the transaction of Atomically that ctx
// carries, or else the store's pool for reads.
func (s *Store) read(ctx context.Context) db {
	if d, ok := s.inTx(ctx); ok {
		return d
	}
	return db{c: s.r, pg: s.pg, prepared: s.reads}
}

// write runs fn in a write transaction (BEGIN IMMEDIATE on SQLite) and
// commits it; within Atomically (ctx carries its transaction), fn runs in
// that transaction, which commits when Atomically's function returns.
//
// On PostgreSQL, a transaction aborted as a deadlock's victim or for a
// serialization failure runs again, from the start, up to three times in
// all: fn must not depend on what an earlier run of it did.
func (s *Store) write(ctx context.Context, fn func(db) error) error {
	if d, ok := s.inTx(ctx); ok {
		return fn(d)
	}
	for attempt := 1; ; attempt++ {
		err := s.writeOnce(ctx, fn)
		if attempt == 3 || !isRetryable(err) {
			return err
		}
	}
}

func (s *Store) writeOnce(ctx context.Context, fn func(db) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	var appended bool
	if err := fn(db{c: tx, pg: s.pg, prepared: s.prepared, appended: &appended}); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if appended {
		s.bell.ring()
	}
	return nil
}

// Atomically runs fn in one write transaction: every read and write of the
// store that fn makes with the context it is given runs in it, and commits
// when fn returns nil (nothing is written when it fails). It is how a
// service checks who may do something in the same transaction as the write
// that does it: on SQLite no other write runs meanwhile; on PostgreSQL the
// rows authorization reads (memberships, keys) are locked against change
// until the commit (forShare). fn must make no call that waits on another
// write of this store under a context without the transaction: on SQLite,
// whose one writer fn holds, that waits forever.
//
// On PostgreSQL, fn may run again, as write's functions may.
func (s *Store) Atomically(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := s.inTx(ctx); ok {
		return fn(ctx)
	}
	return s.write(ctx, func(d db) error {
		return fn(context.WithValue(ctx, txKey{}, txOf{s, d}))
	})
}

// txKey is the context key of the transaction Atomically runs in.
type txKey struct{}

// txOf is a transaction of Atomically and the store it is one of.
type txOf struct {
	s *Store
	d db
}

// inTx is the transaction of Atomically on s that ctx carries, if any.
func (s *Store) inTx(ctx context.Context) (db, bool) {
	t, ok := ctx.Value(txKey{}).(txOf)
	if !ok || t.s != s {
		return db{}, false
	}
	return t.d, true
}

// micros turns a time into the ledger's integer form; the zero time is NULL.
func micros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

// fromMicros is the inverse of micros.
func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}
