package ledger

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// conn is what db runs statements on: a pool or a transaction.
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// db runs the ledger's statements in the store's dialect. Statements are
// written once, for both dialects, with ? placeholders; on PostgreSQL they
// are rewritten to $1, $2, … (once per statement text).
type db struct {
	c  conn
	pg bool
	// prepared holds statements prepared on the connection c's transaction
	// runs on (SQLite's writer), by text; read-only once the store is open.
	prepared map[string]*sql.Stmt
	// appended, in a write transaction, is set when it appends an org
	// event, so that the commit rings the store's bell (events.go).
	appended *bool
}

func (d db) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := d.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return d.c.ExecContext(ctx, d.sql(q), args...)
}

func (d db) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := d.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return d.c.QueryContext(ctx, d.sql(q), args...)
}

func (d db) row(ctx context.Context, q string, args ...any) *sql.Row {
	if st := d.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return d.c.QueryRowContext(ctx, d.sql(q), args...)
}

// stmt is q's prepared statement for d, or nil: on the pool it was
// prepared on, itself (database/sql prepares it on each connection of the
// pool once); in a transaction, the transaction's (database/sql finds it
// already prepared on the transaction's connection, and prepares it there
// again only if that connection was replaced).
func (d db) stmt(ctx context.Context, q string) *sql.Stmt {
	st, ok := d.prepared[q]
	if !ok {
		return nil
	}
	if tx, isTx := d.c.(*sql.Tx); isTx {
		return tx.StmtContext(ctx, st)
	}
	return st
}

// forUpdate is the clause that locks the rows a SELECT reads until the
// transaction ends: needed on PostgreSQL, where transactions run side by
// side; SQLite has one writer at a time and no such clause. It is FOR NO
// KEY UPDATE: no row's key ever changes, and so a foreign key's check in
// another transaction (FOR KEY SHARE of the row it names: an API key
// inserted under an org while a member of that org is removed) neither
// waits for it nor makes a deadlock with it.
func (d db) forUpdate() string {
	if d.pg {
		return " FOR NO KEY UPDATE"
	}
	return ""
}

// forShare is the clause that keeps the rows a SELECT inside a transaction
// reads from changing until the transaction ends, on PostgreSQL: what
// authorization reads within Atomically (a role, a membership) then holds
// until the write it allowed commits. Outside a transaction, and on SQLite
// (one writer at a time), it is nothing.
func (d db) forShare() string {
	if _, isTx := d.c.(*sql.Tx); isTx && d.pg {
		return " FOR SHARE"
	}
	return ""
}

// forUpdateIf is forUpdate when lock is true, else nothing: for reads that
// lock only inside a write.
func (d db) forUpdateIf(lock bool) string {
	if lock {
		return d.forUpdate()
	}
	return ""
}

func (d db) sql(q string) string {
	if !d.pg {
		return q
	}
	if r, ok := rebound.Load(q); ok {
		return r.(string)
	}
	r := rebind(q)
	rebound.Store(q, r)
	return r
}

// rebound caches rebind by statement text.
var rebound sync.Map

// rebind numbers the ? placeholders of q outside quoted strings.
func rebind(q string) string {
	var b strings.Builder
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// isRetryable reports whether err aborted a PostgreSQL transaction that
// may succeed when run again: a deadlock's victim, a serialization failure.
func isRetryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// isUniqueViolation reports whether err is a unique constraint's refusal.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}
